#!/usr/bin/env bash
# `make instructions`: user-space instructions per request of each service
# and its peer, counted by valgrind (callgrind), side by side in one run.
#
# Why a second measure beside `make load`: on a shared 2-core machine the
# req/s and CPU-time ratios of `make load` move by 0.05-0.16 between runs
# with no code change. An instruction count does not depend on what else
# the machine runs, so a change of a few percent shows, and shows where
# (`callgrind_annotate` on the files this leaves in $INSTR_KEEP). It is not
# a time: a cache miss counts as one instruction and a large `memcpy`
# (`rep movsb`) as one per byte. Report the two side by side.
#
# Each server runs under callgrind; the counters are zeroed once it answers,
# INSTR_REQUESTS requests (default 20000) are sent (h2load, 10 connections;
# gRPC with 10 streams each), the counters are dumped and the server is
# killed. Two pairs of rows send 10 and then 40 requests over each of
# 2,000 connections open at once: from the two, what a request costs with
# that many open and what a connection costs (its accept, task, buffers and
# close); another pair sends INSTR_CLOSE_REQUESTS (default 5000)
# with `Connection: close`, one request a connection, h2load reconnecting
# after each. Every thread of the process counts (runtime, store, log
# writer).
#
# As in `make load`, the headline rows run every handwire server with its
# access log off (`--no-access-log`) beside peers that log nothing; the
# rows marked "access log on" run router-demo with its request logger
# beside axum with tower-http's TraceLayer (`peer_axum --log`).
#
# Two floors stand beside the peers: examples/bare_hyper.rs on this crate's
# accept loop (trace context, clocks, governor) and the same answers from
# hyper-util's builder alone (`--hyper-only`), for `/hello` and for a
# Health/Check with nothing but what the wire needs. What a peer costs over
# a floor bounds the ratio any server on that floor can reach against it.
#
# The gate (`INSTR_GATE=1`, run by .ci/run): only router-demo (access log
# off) and axum, on `GET /hello` over 10 keep-alive connections and on
# `GET /hello` with `Connection: close`, counted in the same job; each ratio
# (axum's count over router-demo's) must not fall more than 5 % below its
# figure committed in load/instructions-gate (a commit that changes one on
# purpose updates the figure and says why). Ratios, not counts: another CPU
# or compiler moves both sides. `INSTR_GATE=warn` prints the verdicts and
# exits 0.
#
# Environment: INSTR_REQUESTS, INSTR_CLOSE_REQUESTS, INSTR_PORT_BASE (default 18800),
# INSTR_NO_BUILD=1 (skip cargo build), INSTR_BIN_DIR (default target/release:
# another build's binaries, e.g. an older commit's, to compare before and
# after), INSTR_KEEP=DIR (keep the callgrind files there). Needs valgrind,
# h2load (nghttp2-client), curl, ss.
set -euo pipefail
cd "$(dirname "$0")/.."
# 2,000 connections at once (the connection rows) need more descriptors
# than a default soft limit of 1,024.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
. load/common.sh

n="${INSTR_REQUESTS:-20000}"
port="${INSTR_PORT_BASE:-18800}"
for tool in valgrind callgrind_control callgrind_annotate; do
	need "$tool" "Debian: apt-get install -y valgrind"
done
need h2load "Debian: apt-get install -y nghttp2-client"
need curl "Debian: apt-get install -y curl"
need ss "Debian: apt-get install -y iproute2"
missing_tools instructions.sh
gate="${INSTR_GATE:-}"
if [ "${INSTR_NO_BUILD:-}" != 1 ]; then
	if [ -n "$gate" ]; then
		cargo build --release --bin router-demo --example peer_axum
	else
		cargo build --release --bin router-demo --bin greeter \
			--example peer_axum --example peer_tonic --example bare_hyper
	fi
fi
bin="${INSTR_BIN_DIR:-target/release}"
tmp=$(mktemp -d)
keep="${INSTR_KEEP:-$tmp}"
mkdir -p "$keep"
vg_pid=
cleanup() {
	[ -n "$vg_pid" ] && kill -9 "$vg_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# The gRPC calls: SayHello{name: "world"} and Health/Check{service: ""}.
say="$tmp/sayhello.bin"
write_sayhello_frame "$say"
health="$tmp/health.bin"
write_health_frame "$health"
greeter_config "$tmp/greeter.yaml" "$((port + 1))" "$port" ":memory:"
# The durable row: the same greeter storing on a file (WAL, synchronous=FULL,
# group commit). Only user space is counted: the kernel's writes and fsyncs
# are not instructions here (`make load` has them in its CPU column).
greeter_config "$tmp/greeter-file.yaml" "$((port + 1))" "$port" "$tmp/greeter.db"

# count NAME KIND(http|grpc) PATH [FRAME] -- CMD...: instructions per request
# (`conns=N n=M count …`: M requests over N HTTP/1.1 connections, default 10;
# `close=1 count …`: each request with `Connection: close`)
conns=10
close=
close_n="${INSTR_CLOSE_REQUESTS:-5000}"
count() {
	local name=$1 kind=$2 path=$3 frame=${4:-}
	shift 4
	[ "$1" = -- ] && shift
	local out="$keep/callgrind.$name"
	rm -f "$out" "$out".*
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>"$tmp/$name.err" &
	vg_pid=$!
	local up=
	for _ in $(seq 150); do
		if ss -ltn | grep -q "127.0.0.1:$port "; then up=1 && break; fi
		sleep 0.2
	done
	[ -n "$up" ] || { echo "$name did not start: $(tail -3 "$tmp/$name.err")" >&2; exit 1; }
	send() { # send COUNT [CONNS]: that many requests, the number that succeeded
		local load
		if [ "$kind" = http ]; then
			load=(h2load --h1 -t1 -c"${2:-$conns}" -n "$1" "http://127.0.0.1:$port$path")
			[ -z "$close" ] || load+=(-H 'Connection: close')
		else
			load=(h2load -t1 -c10 -m10 -n "$1" -d "$frame" -H 'content-type: application/grpc'
				-H 'te: trailers' "http://127.0.0.1:$port$path")
		fi
		"${load[@]}" 2>&1 | grep -oE '[0-9]+ succeeded' | cut -d' ' -f1
	}
	# Warm up (lazy statics, caches, the first connections), then count.
	send 2000 10 >/dev/null
	callgrind_control -z "$vg_pid" >/dev/null 2>&1
	local done
	done=$(send "$n")
	callgrind_control -d "$vg_pid" >/dev/null 2>&1
	kill -9 "$vg_pid" 2>/dev/null || true
	wait "$vg_pid" 2>/dev/null || true
	vg_pid=
	[ "${done:-0}" = "$n" ] || { echo "$name: $done of $n requests succeeded" >&2; exit 1; }
	local file
	file=$(ls -t "$out".* | head -1)
	callgrind_annotate "$file" 2>/dev/null |
		awk -v n="$n" '/PROGRAM TOTALS/ { gsub(",", "", $1); printf "%.0f\n", $1 / n }'
}

rows=()
pair() { # TITLE ours PEER_NAME peer
	local ratio
	ratio=$(awk -v a="$2" -v b="$4" 'BEGIN { printf "%.2f", b / a }')
	rows+=("| $1 | $2 | $3 | $4 | $ratio |")
	echo "  $1: handwire $2, $3 $4, peer/handwire $ratio"
}

addr="127.0.0.1:$port"
# The headline: router-demo with its access log off.
demo=("$bin/router-demo" --addr "$addr" --quiet --no-access-log)
if [ -n "$gate" ]; then
	rd=$(count router-demo http /hello "" -- "${demo[@]}")
	axum=$(count axum http /hello "" -- "$bin/examples/peer_axum" "$addr")
	rd_close=$(close=1 n=$close_n conns=10 count router-demo-close http /hello "" -- "${demo[@]}")
	axum_close=$(close=1 n=$close_n conns=10 count axum-close http /hello "" -- \
		"$bin/examples/peer_axum" "$addr")
	# The committed figures: the first two numbers on the file's first line.
	read -r committed committed_close _ < <(head -1 load/instructions-gate)
	verdict() { # WHAT AXUM OURS COMMITTED
		awk -v w="$1" -v a="$2" -v r="$3" -v c="$4" 'BEGIN {
			ratio = a / r; floor = c * 0.95
			printf "%s axum/router-demo on %s: %.3f (axum %d, router-demo %d instructions a request); committed %.3f, floor %.3f\n",
				(ratio >= floor) ? "PASS" : "FAIL", w, ratio, a, r, c, floor }'
	}
	verdicts=$(verdict "GET /hello" "$axum" "$rd" "$committed"
		verdict "GET /hello, Connection: close" "$axum_close" "$rd_close" "$committed_close")
	echo "$verdicts" | sed 's/^/instructions gate: /'
	if grep -q '^FAIL' <<<"$verdicts"; then
		[ "$gate" = warn ] && exit 0 || exit 1
	fi
	exit 0
fi
rd=$(count router-demo http /hello "" -- "${demo[@]}")
bare=$(count bare_hyper http /hello "" -- "$bin/examples/bare_hyper" "$addr")
plain=$(count hyper-only http /hello "" -- "$bin/examples/bare_hyper" "$addr" --hyper-only)
axum=$(count axum http /hello "" -- "$bin/examples/peer_axum" "$addr")
book=$(count router-demo-book http /book/42 "" -- "${demo[@]}")
axum_book=$(count axum-book http /book/42 "" -- "$bin/examples/peer_axum" "$addr")
pair "router-demo GET /hello" "$rd" axum "$axum"
pair "router-demo GET /hello" "$rd" "bare hyper" "$bare"
pair "router-demo GET /hello" "$rd" "hyper alone" "$plain"
pair "router-demo GET /book/42 vs /hello" "$book" "/hello" "$rd"
pair "router-demo GET /book/42" "$book" axum "$axum_book"
# The access log on: router-demo's request logger, axum's TraceLayer.
rd_log=$(count router-demo-log http /hello "" -- "$bin/router-demo" --addr "$addr" --quiet)
axum_log=$(count axum-log http /hello "" -- "$bin/examples/peer_axum" "$addr" --log)
book_log=$(count router-demo-book-log http /book/42 "" -- "$bin/router-demo" --addr "$addr" --quiet)
axum_book_log=$(count axum-book-log http /book/42 "" -- "$bin/examples/peer_axum" "$addr" --log)
pair "router-demo GET /hello, access log on" "$rd_log" "axum+TraceLayer" "$axum_log"
pair "router-demo GET /book/42, access log on" "$book_log" "axum+TraceLayer" "$axum_book_log"
# What a connection costs with 2,000 open at once: 2,000 connections of 10
# requests, then 2,000 of 40. Counted a request, the runs give R + C/10 and
# R + C/40 (R: a request with 2,000 connections open; C: a connection, its
# accept, task, buffers and close), so C = 40/3 (m10 - m40). The 10-connection
# row is no baseline for C: what a request costs moves with the number of
# connections open, and not alike in every server (docs/load.md).
rd_c10=$(conns=2000 n=20000 count router-demo-conns10 http /hello "" -- "${demo[@]}")
axum_c10=$(conns=2000 n=20000 count axum-conns10 http /hello "" -- "$bin/examples/peer_axum" "$addr")
rd_c40=$(conns=2000 n=80000 count router-demo-conns40 http /hello "" -- "${demo[@]}")
axum_c40=$(conns=2000 n=80000 count axum-conns40 http /hello "" -- "$bin/examples/peer_axum" "$addr")
per_request() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (4 * b - a) / 3 }'; }
per_connection() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 40 * (a - b) / 3 }'; }
pair "router-demo GET /hello, 2,000 connections of 10 requests" "$rd_c10" axum "$axum_c10"
pair "router-demo GET /hello, 2,000 connections of 40 requests" "$rd_c40" axum "$axum_c40"
pair "router-demo GET /hello, a request with 2,000 connections open" \
	"$(per_request "$rd_c10" "$rd_c40")" axum "$(per_request "$axum_c10" "$axum_c40")"
pair "router-demo, a connection (accept to close) with 2,000 open" \
	"$(per_connection "$rd_c10" "$rd_c40")" axum "$(per_connection "$axum_c10" "$axum_c40")"
# One request a connection: everything a connection costs, on one request.
rd_close=$(close=1 n=$close_n count router-demo-close http /hello "" -- "${demo[@]}")
axum_close=$(close=1 n=$close_n count axum-close http /hello "" -- "$bin/examples/peer_axum" "$addr")
pair "router-demo GET /hello, Connection: close" "$rd_close" axum "$axum_close"
grpc_say=$(count greeter-say grpc /helloworld.v1.Greeter/SayHello "$say" -- \
	"$bin/greeter" --config "$tmp/greeter.yaml" --no-access-log)
grpc_file=$(count greeter-say-file grpc /helloworld.v1.Greeter/SayHello "$say" -- \
	"$bin/greeter" --config "$tmp/greeter-file.yaml" --no-access-log)
grpc_health=$(count greeter-health grpc /grpc.health.v1.Health/Check "$health" -- \
	"$bin/greeter" --config "$tmp/greeter.yaml" --no-access-log)
tonic_say=$(count tonic-say grpc /helloworld.v1.Greeter/SayHello "$say" -- \
	"$bin/examples/peer_tonic" "$addr")
# The same work as the greeter's store: tonic with a store thread that
# commits each batch of greetings as one transaction (`--commit group`).
tonic_group=$(count tonic-say-group grpc /helloworld.v1.Greeter/SayHello "$say" -- \
	"$bin/examples/peer_tonic" "$addr" --db :memory: --commit group)
# The same on a file, as the greeter's file row stores (WAL, synchronous=FULL).
tonic_group_file=$(count tonic-say-group-file grpc /helloworld.v1.Greeter/SayHello "$say" -- \
	"$bin/examples/peer_tonic" "$addr" --db "$tmp/peer-group.db" --synchronous FULL --commit group)
tonic_health=$(count tonic-health grpc /grpc.health.v1.Health/Check "$health" -- \
	"$bin/examples/peer_tonic" "$addr")
bare_health=$(count bare-health grpc /grpc.health.v1.Health/Check "$health" -- \
	"$bin/examples/bare_hyper" "$addr")
plain_health=$(count hyper-only-health grpc /grpc.health.v1.Health/Check "$health" -- \
	"$bin/examples/bare_hyper" "$addr" --hyper-only)
pair "greeter Health/Check (framing)" "$grpc_health" tonic-health "$tonic_health"
# The floor: a unary call answered on the same accept loop with nothing but
# what the wire needs (see examples/bare_hyper.rs).
pair "greeter Health/Check (framing)" "$grpc_health" "bare hyper (h2)" "$bare_health"
pair "greeter Health/Check (framing)" "$grpc_health" "hyper alone (h2)" "$plain_health"
pair "greeter SayHello, :memory:" "$grpc_say" "tonic (stateless)" "$tonic_say"
pair "greeter SayHello, :memory:" "$grpc_say" "tonic+rusqlite group" "$tonic_group"
pair "greeter SayHello, file DB (user space)" "$grpc_file" "tonic (stateless)" "$tonic_say"
pair "greeter SayHello, file DB (user space)" "$grpc_file" "tonic+rusqlite group, file" "$tonic_group_file"

echo
echo "Instructions per request (valgrind callgrind, $n requests after 2,000 to warm up):"
echo
echo "| workload | handwire instr/req | peer | peer instr/req | peer/handwire |"
echo "|---|---:|---|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
# The parameter route over the static one, in each server.
awk -v b="$book" -v h="$rd" -v ab="$axum_book" -v ah="$axum" 'BEGIN {
	printf "GET /book/42 over GET /hello: router-demo +%.1f %%, axum +%.1f %%.\n\n", 100 * (b / h - 1), 100 * (ab / ah - 1)
}'
# What the floors leave to any framing on hyper and h2 against tonic-health.
awk -v t="$tonic_health" -v b="$bare_health" -v p="$plain_health" 'BEGIN {
	printf "Floors of a unary call: %d instructions on this accept loop (bare hyper), %d on hyper\n", b, p
	printf "alone. tonic-health costs %.2f and %.2f times those: by this count no server on this\n", t / b, t / p
	printf "accept loop can be more than %.2f times tonic-health, nor one on hyper more than %.2f.\n", t / b, t / p
}'
