#!/usr/bin/env bash
# `make load`: handwire's three services side by side with peers built on
# mainstream crates (examples/peer_axum.rs, examples/peer_tonic.rs), in one
# run, on loopback only. Bounded: about five minutes with the defaults.
#
# How it measures
# * Servers run on core 0 and every load generator on core 1 (`taskset`),
#   when taskset exists and there are at least 2 cores. A pinned server sees
#   one CPU, so tokio (handwire's and the peers') starts one worker thread.
# * Each workload runs LOAD_ROUNDS rounds (default 3); in each round every
#   contender is measured for LOAD_SECONDS (default 5), and the order flips
#   from one round to the next (handwire first, then the peer first, ...), so
#   drift of the machine is spread over both. Reported: medians over rounds.
# * HTTP with wrk (-t1 -c50, --latency); gRPC with h2load (-c10 -m10, a
#   length-prefixed protobuf frame as the POST body). h2load counts every
#   HTTP 200 as a success, so before measuring, one call per gRPC server is
#   made with curl and its trailer must say `grpc-status: 0`; and each
#   handwire/peer pair must answer the same body and content type.
# * p99 latency: wrk's own percentile; for h2load, from its per-request log.
# * Server CPU per request: the user + system time of the server process over
#   a round (/proc/PID/stat) over the requests it completed; its median is
#   reported beside req/s, and the CPU ratio (peer's over handwire's) beside
#   the req/s ratio: on a busy machine a round that loses the core loses
#   req/s, not CPU per request. Every contender is warmed up for 1 s first.
#
# The headline rows run every handwire server as throughput benchmarks run
# a server (TechEmpower's rules): access log off (`--no-access-log`),
# everything else at its default (the defences, the traceparent, the
# metrics); the peers log nothing either. The rows marked "access log on"
# run router-demo with its request logger against axum with its usual one
# (`peer_axum --log`: tower-http's TraceLayer, tracing-subscriber's fmt
# layer, tracing-appender's non-blocking stdout). Stdout goes to /dev/null.
#
# Workloads: router-demo /hello and /book/42 vs axum (and /hello also vs
# examples/bare_hyper: handwire's accept loop with no router, chain or
# logger); the same two with the access log on vs axum with TraceLayer;
# /hello with `Connection: close` (one request a connection: accept, open,
# serve, close) vs axum; router-demo /hello with Prometheus
# metrics (the default) vs `--no-metrics` (budget: within 5 %); greeter SayHello (:memory:) vs tonic
# and vs tonic + rusqlite storing the same rows by group commit; greeter SayHello
# with a file DB vs tonic, vs tonic + rusqlite by group commit and vs tonic +
# rusqlite committing each call; greeter /helloworld/{name}
# with a file DB vs axum (which writes nothing); 1,000 and 10,000 keep-alive
# connections on /hello with p99, peak RSS and socket errors (fresh processes); token-auth's profile p99 idle vs
# while 20 concurrent bcrypt logins run; TLS: router-demo /hello over HTTPS
# vs axum-server with rustls, keep-alive and one handshake per request
# (development certificate from examples/dev_cert.rs, ECDSA P-256).
#
# Environment: LOAD_SECONDS, LOAD_ROUNDS, LOAD_SYNCHRONOUS (FULL or NORMAL;
# default: what src/services/greeter/data/ sets, else SQLite's FULL),
# LOAD_PORT_BASE (default 18500), LOAD_NO_BUILD=1 (skip cargo build),
# LOAD_PIN=0 (no taskset), LOAD_CONNECTIONS (default "1000 10000"), LOAD_ROWS (a bash regex: only the workloads whose
# title matches, e.g. LOAD_ROWS='SayHello|framing'), LOAD_CLUSTER=0 (skip the PostgreSQL + Redis run,
# load/load-cluster.sh), LOAD_ONLY=cluster (only that run) or LOAD_ONLY=tls
# (only the TLS rows), LOAD_BIN_DIR (default target/release; e.g. target/debug
# with LOAD_NO_BUILD=1 to check the script itself, not to measure). Needs wrk,
# h2load (nghttp2-client) and curl; the cluster run also postgresql and
# redis-server (skipped, saying so, without them).
set -euo pipefail
cd "$(dirname "$0")/.."
. load/common.sh
repo=$PWD
secs="${LOAD_SECONDS:-5}"
rounds="${LOAD_ROUNDS:-3}"
port_base="${LOAD_PORT_BASE:-18500}"

# ---- tools ------------------------------------------------------------------
need wrk "Debian: apt-get install -y wrk"
[ "${LOAD_ONLY:-}" = tls ] || need h2load "Debian: apt-get install -y nghttp2-client"
need curl "Debian: apt-get install -y curl"
need ss "Debian: apt-get install -y iproute2"
if [ "${LOAD_NO_BUILD:-}" != 1 ]; then
	need cargo "or set LOAD_NO_BUILD=1 with release binaries built"
fi
missing_tools load.sh
if ! curl --version | grep -q HTTP2; then
	echo "load.sh: this curl has no HTTP/2 support (needed for the grpc-status check)" >&2
	exit 1
fi
pin_server=() pin_load=() pinning="none (taskset missing or fewer than 2 cores)"
if [ "${LOAD_PIN:-1}" != 0 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	pin_server=(taskset -c 0) pin_load=(taskset -c 1)
	pinning="servers on core 0, load generators on core 1"
elif [ "${LOAD_PIN:-1}" = 0 ]; then
	pinning="none (LOAD_PIN=0)"
fi

# The synchronous level of the greeter's file store: set explicitly in its
# data layer, or SQLite's default for WAL databases (FULL; the bundled
# libsqlite3-sys does not change it). The tonic + rusqlite peer gets the same.
if [ -n "${LOAD_SYNCHRONOUS:-}" ]; then
	sync_level="${LOAD_SYNCHRONOUS^^}" sync_from="LOAD_SYNCHRONOUS"
else
	# The store sets it with pragma_update(None, "synchronous", "LEVEL").
	sync_level=$(grep -hoE '"synchronous", *"[A-Za-z]+"' src/services/greeter/data/*.rs |
		head -1 | sed -E 's/.*, *"([A-Za-z]+)"/\1/' | tr a-z A-Z || true)
	sync_from="src/services/greeter/data/"
	if [ -z "$sync_level" ]; then
		sync_level=FULL sync_from="SQLite default; the data layer sets none"
	fi
fi
case "$sync_level" in FULL | NORMAL) ;; *)
	echo "load.sh: synchronous=$sync_level: the peer supports FULL or NORMAL" >&2
	exit 1
	;;
esac

if [ "${LOAD_NO_BUILD:-}" != 1 ]; then
	cargo build --release --bins --examples --features cluster
fi
bin="${LOAD_BIN_DIR:-target/release}"
for b in router-demo greeter token-auth examples/peer_axum examples/peer_tonic examples/bare_hyper examples/dev_cert; do
	[ -x "$bin/$b" ] || { echo "load.sh: $bin/$b is not built" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/handwire-load.XXXXXX")
pids=() workers=()
cleanup() {
	touch "$tmp/stop" 2>/dev/null || true
	if declare -F cluster_cleanup >/dev/null; then cluster_cleanup; fi
	for p in "${workers[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# 1,000 and 10,000 connections need more than the usual 1,024 descriptors:
# the soft limit is raised to the hard one (servers and wrk inherit it).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ---- servers ------------------------------------------------------------------
# start NAME CMD...: run pinned, stdout (request logs) to /dev/null, stderr kept.
start() {
	local name=$1
	shift
	"${pin_server[@]}" "$@" >/dev/null 2>"$tmp/$name.err" &
	pids+=($!)
	last_pid=$!
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
wait_http() { # URL NAME
	for _ in $(seq 100); do
		curl -sf --cacert "$tmp/tls/ca.pem" -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "load.sh: $2 did not answer $1; its stderr:" >&2
	cat "$tmp/$2.err" >&2
	exit 1
}


p_demo=$port_base p_axum=$((port_base + 1))
p_gmem_http=$((port_base + 2)) p_gmem=$((port_base + 3))
p_gfile_http=$((port_base + 4)) p_gfile=$((port_base + 5))
p_tonic=$((port_base + 6)) p_tonic_db=$((port_base + 7))
p_auth=$((port_base + 8)) p_c1k=$((port_base + 9)) p_bare=$((port_base + 10))
p_demo_nometrics=$((port_base + 11))
p_demo_tls=$((port_base + 12)) p_axum_tls=$((port_base + 13))
p_tonic_gmem=$((port_base + 14)) p_tonic_gfile=$((port_base + 15))
p_demo_log=$((port_base + 16)) p_axum_log=$((port_base + 17))

greeter_config "$tmp/mem.yaml" "$p_gmem_http" "$p_gmem" ":memory:"
greeter_config "$tmp/file.yaml" "$p_gfile_http" "$p_gfile" "$tmp/greeter.db"
# The headline: every handwire server with its access log off.
nolog=--no-access-log
start router-demo "$bin/router-demo" --addr "127.0.0.1:$p_demo" --quiet $nolog
start router-demo-nometrics "$bin/router-demo" --addr "127.0.0.1:$p_demo_nometrics" --quiet --no-metrics $nolog
start peer_axum "$bin/examples/peer_axum" "127.0.0.1:$p_axum"
# The access log on, each server with its own.
start router-demo-log "$bin/router-demo" --addr "127.0.0.1:$p_demo_log" --quiet
start peer_axum_log "$bin/examples/peer_axum" "127.0.0.1:$p_axum_log" --log
# The TLS pair: one development certificate, served by both.
"$bin/examples/dev_cert" "$tmp/tls" >/dev/null
start router-demo-tls "$bin/router-demo" --addr "127.0.0.1:$p_demo_tls" --quiet $nolog \
	--tls-cert "$tmp/tls/cert.pem" --tls-key "$tmp/tls/key.pem"
start peer_axum_tls "$bin/examples/peer_axum" "127.0.0.1:$p_axum_tls" "$tmp/tls/cert.pem" "$tmp/tls/key.pem"
start greeter-mem "$bin/greeter" --config "$tmp/mem.yaml" $nolog
start greeter-file "$bin/greeter" --config "$tmp/file.yaml" $nolog
start bare_hyper "$bin/examples/bare_hyper" "127.0.0.1:$p_bare"
start peer_tonic "$bin/examples/peer_tonic" "127.0.0.1:$p_tonic"
start peer_tonic_db "$bin/examples/peer_tonic" "127.0.0.1:$p_tonic_db" \
	--db "$tmp/peer.db" --synchronous "$sync_level"
# The same work as the greeter's store, done as a careful tonic service would:
# one store thread, a std channel, one transaction a batch.
start peer_tonic_gmem "$bin/examples/peer_tonic" "127.0.0.1:$p_tonic_gmem" \
	--db :memory: --commit group
start peer_tonic_gfile "$bin/examples/peer_tonic" "127.0.0.1:$p_tonic_gfile" \
	--db "$tmp/peer-group.db" --synchronous "$sync_level" --commit group
wait_http "http://127.0.0.1:$p_demo/hello" router-demo
wait_http "http://127.0.0.1:$p_demo_nometrics/hello" router-demo-nometrics
wait_http "http://127.0.0.1:$p_axum/hello" peer_axum
wait_http "http://127.0.0.1:$p_demo_log/hello" router-demo-log
wait_http "http://127.0.0.1:$p_axum_log/hello" peer_axum_log
wait_http "https://127.0.0.1:$p_demo_tls/hello" router-demo-tls
wait_http "https://127.0.0.1:$p_axum_tls/hello" peer_axum_tls
wait_http "http://127.0.0.1:$p_bare/hello" bare_hyper
wait_http "http://127.0.0.1:$p_gmem_http/helloworld/up" greeter-mem
wait_http "http://127.0.0.1:$p_gfile_http/helloworld/up" greeter-file

# ---- checks before measuring ---------------------------------------------------
frame="$tmp/sayhello.bin"
write_sayhello_frame "$frame"
grpc_check() { # PORT NAME: one real call; the trailer must say grpc-status 0
	local out="$tmp/$2.grpc"
	for _ in $(seq 100); do
		if curl -s --http2-prior-knowledge -D "$out.head" -o "$out.body" \
			-H 'content-type: application/grpc' -H 'te: trailers' \
			--data-binary @"$frame" "http://127.0.0.1:$1${path:-/helloworld.v1.Greeter/SayHello}" &&
			grep -qiE '^grpc-status: *0' "$out.head"; then
			return 0
		fi
		sleep 0.1
	done
	echo "load.sh: $2 did not answer ${path:-SayHello} with grpc-status 0; headers+trailers:" >&2
	cat "$out.head" >&2 || true
	cat "$tmp/$2.err" >&2
	exit 1
}
grpc_check "$p_gmem" greeter-mem
grpc_check "$p_gfile" greeter-file
grpc_check "$p_tonic" peer_tonic
grpc_check "$p_tonic_db" peer_tonic_db
grpc_check "$p_tonic_gmem" peer_tonic_gmem
grpc_check "$p_tonic_gfile" peer_tonic_gfile
health_frame="$tmp/health.bin"
write_health_frame "$health_frame"
frame=$health_frame path=/grpc.health.v1.Health/Check grpc_check "$p_gmem" greeter-mem-health
frame=$health_frame path=/grpc.health.v1.Health/Check grpc_check "$p_tonic" peer_tonic-health
cmp -s "$tmp/greeter-mem-health.grpc.body" "$tmp/peer_tonic-health.grpc.body" ||
	{ echo "load.sh: Health/Check reply of tonic-health differs from the greeter's" >&2; exit 1; }
for peer in greeter-file peer_tonic peer_tonic_db peer_tonic_gmem peer_tonic_gfile; do
	cmp -s "$tmp/greeter-mem.grpc.body" "$tmp/$peer.grpc.body" ||
		{ echo "load.sh: SayHello reply of $peer differs from the greeter's" >&2; exit 1; }
done
same_http() { # URL_A URL_B: same status, content type and body bytes
	local a b
	a=$(curl -s --cacert "$tmp/tls/ca.pem" -o "$tmp/a.body" -w '%{http_code} %{content_type}' "$1")
	b=$(curl -s --cacert "$tmp/tls/ca.pem" -o "$tmp/b.body" -w '%{http_code} %{content_type}' "$2")
	if [ "$a" != "$b" ] || ! cmp -s "$tmp/a.body" "$tmp/b.body"; then
		echo "load.sh: $1 and $2 answer differently:" >&2
		echo "  $a: $(cat "$tmp/a.body")" >&2
		echo "  $b: $(cat "$tmp/b.body")" >&2
		exit 1
	fi
	echo "  same answer from both: $a $(cat "$tmp/a.body")  ($1, $2)"
}
echo "== checks"
same_http "http://127.0.0.1:$p_demo/hello" "http://127.0.0.1:$p_axum/hello"
same_http "http://127.0.0.1:$p_demo/hello" "http://127.0.0.1:$p_bare/hello"
same_http "http://127.0.0.1:$p_demo/book/42" "http://127.0.0.1:$p_axum/book/42"
same_http "http://127.0.0.1:$p_demo_log/book/42" "http://127.0.0.1:$p_axum_log/book/42"
same_http "https://127.0.0.1:$p_demo_tls/hello" "https://127.0.0.1:$p_axum_tls/hello"
same_http "http://127.0.0.1:$p_gfile_http/helloworld/load" "http://127.0.0.1:$p_axum/helloworld/load"
echo "  grpc-status 0 and the same SayHello reply from greeter (:memory:), greeter (file), tonic, tonic+rusqlite (per call; group commit on :memory: and on a file)"

# ---- measuring -----------------------------------------------------------------
to_ms() { # wrk latency such as 812.00us, 1.23ms, 1.01s -> milliseconds
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000; else if (v ~ /m$/) n *= 60000
		printf "%.2f", n }'
}
# The server's CPU time per request: the user + system time of the process
# listening on the URL's port (all its threads: runtime, store, log writer)
# over the run, divided by the requests completed. Less sensitive than
# req/s to a busy machine (a round that loses the core to other work loses
# throughput, not CPU per request), so each row reports both.
server_pid() { # URL -> pid of the process listening on its port
	local hostport=${1#*://}
	hostport=${hostport%%/*}
	ss -Hltnp "sport = :${hostport##*:}" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# cpu_per_request PID TICKS_BEFORE REQUESTS -> microseconds (0 if unknown)
cpu_per_request() {
	awk -v a="$2" -v b="$(cpu_ticks "$1")" -v n="${3:-0}" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { if (n > 0) printf "%.2f", (b - a) * 1000000 / hz / n; else print 0 }'
}
# wrk_run OUT URL [wrk options...]: prints "req/s p99_ms"; warns on errors;
# the server's CPU µs per request goes to OUT.cpu.
wrk_run() {
	local out=$1 url=$2
	shift 2
	local pid t0
	pid=$(server_pid "$url")
	t0=$(cpu_ticks "$pid")
	"${pin_load[@]}" wrk -t1 -d"${secs}s" --latency "$@" "$url" >"$out"
	cpu_per_request "$pid" "$t0" "$(awk '/ requests in / {print $1}' "$out")" >"$out.cpu"
	local rps p99
	rps=$(awk '/^Requests\/sec/ {print $2}' "$out")
	p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
	if grep -qE 'Non-2xx|Socket errors' "$out"; then
		echo "    (wrk on $url: $(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | tr '\n' ' '))" >&2
	fi
	echo "$rps $p99"
}
# h2load_run OUT URL: the call in $frame for LOAD_SECONDS (the caller warms
# up: CPU per request counts every request the server answered in the run).
h2load_run() {
	local out=$1 url=$2
	rm -f "$out.log"
	local pid t0
	pid=$(server_pid "$url")
	t0=$(cpu_ticks "$pid")
	"${pin_load[@]}" h2load -t1 -c10 -m10 -D "$secs" \
		-d "$frame" -H 'content-type: application/grpc' -H 'te: trailers' \
		--log-file="$out.log" "$url" >"$out"
	cpu_per_request "$pid" "$t0" "$(awk '/^requests:/ {print $8}' "$out")" >"$out.cpu"
	local rps p99 fails
	rps=$(awk '/^finished in/ {gsub(",", "", $4); print $4}' "$out")
	fails=$(awk '/^requests:/ {print $10 + $12 + $14}' "$out")
	[ "${fails:-0}" = 0 ] || echo "    (h2load on $url: $fails failed/errored/timed out)" >&2
	# Log lines: start time, HTTP status, microseconds to completion.
	p99=$(awk '{print $3}' "$out.log" | sort -n |
		awk '{v[NR] = $1} END { i = int(NR * 0.99); if (i < 1) i = 1; printf "%.2f", v[i] / 1000 }')
	echo "$rps $p99"
}
median() { sort -g | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.1f-%.1f", lo / 1000, hi / 1000}'; } # req/s range in k
spread_ms() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.1f-%.1f", lo, hi}'; }

results="$tmp/results"
: >"$results"
# compare TITLE KIND URL_HANDWIRE NAME_PEER URL_PEER [NAME_PEER2 URL_PEER2] [-- wrk options]
# KIND is wrk or h2load. Rounds alternate the order; medians go to $results.
compare() {
	local title=$1 kind=$2 hw_url=$3
	shift 3
	local names=(handwire) urls=("$hw_url") extra=()
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
		names+=("$1") urls+=("$2")
		shift 2
	done
	if ! [[ $title =~ ${LOAD_ROWS:-.} ]]; then return 0; fi
	echo "== $title"
	local i r order
	for i in "${!urls[@]}"; do # warm-up, 1 s each
		if [ "$kind" = wrk ]; then
			"${pin_load[@]}" wrk -t1 -d1s -c50 "${extra[@]}" "${urls[$i]}" >/dev/null
		else
			"${pin_load[@]}" h2load -t1 -c10 -m10 -D 1 -d "$frame" -H 'content-type: application/grpc' \
				-H 'te: trailers' "${urls[$i]}" >/dev/null
		fi
	done
	for i in "${!urls[@]}"; do : >"$tmp/m.$i"; done
	for r in $(seq "$rounds"); do
		order=$(seq 0 $((${#urls[@]} - 1)))
		[ $((r % 2)) = 0 ] && order=$(echo "$order" | tac)
		for i in $order; do
			local m
			if [ "$kind" = wrk ]; then
				m=$(wrk_run "$tmp/out" "${urls[$i]}" -c50 "${extra[@]}")
			else
				m=$(h2load_run "$tmp/out" "${urls[$i]}")
			fi
			m="$m $(cat "$tmp/out.cpu")"
			echo "$m" >>"$tmp/m.$i"
			printf '  round %d  %-16s %10.0f req/s   p99 %7.2f ms   server CPU %6.2f us/req\n' "$r" "${names[$i]}" $m
		done
	done
	local hw_rps hw_p99 rps p99 hw_range range hw_cpu cpu
	hw_rps=$(awk '{print $1}' "$tmp/m.0" | median)
	hw_range=$(awk '{print $1}' "$tmp/m.0" | spread)
	hw_p99=$(awk '{print $2}' "$tmp/m.0" | median)
	hw_cpu=$(awk '{print $3}' "$tmp/m.0" | median)
	for i in $(seq 1 $((${#urls[@]} - 1))); do
		rps=$(awk '{print $1}' "$tmp/m.$i" | median)
		p99=$(awk '{print $2}' "$tmp/m.$i" | median)
		range=$(awk '{print $1}' "$tmp/m.$i" | spread)
		cpu=$(awk '{print $3}' "$tmp/m.$i" | median)
		# Each round's own ratio (handwire's run beside the peer's, seconds
		# apart): the host's drift between rounds, which moves both, cancels.
		paste -d' ' "$tmp/m.0" "$tmp/m.$i" | awk '{print $1 / $4}' >"$tmp/ratios"
		paired=$(median <"$tmp/ratios")
		paired_range=$(sort -g "$tmp/ratios" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}')
		printf '  median: handwire %.0f req/s (p99 %.2f ms, %.2f us/req), %s %.0f req/s (p99 %.2f ms, %.2f us/req), ratio %.2f, CPU ratio %.2f, paired %.2f (%s)\n' \
			"$hw_rps" "$hw_p99" "$hw_cpu" "${names[$i]}" "$rps" "$p99" "$cpu" \
			"$(awk -v a="$hw_rps" -v b="$rps" 'BEGIN {print a / b}')" "$(awk -v a="$hw_cpu" -v b="$cpu" 'BEGIN {print (a > 0) ? b / a : 0}')" \
			"$paired" "$paired_range"
		printf '%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n' "$title" "$hw_rps" "${names[$i]}" "$rps" "$hw_p99" "$p99" "$hw_range" "$range" "$hw_cpu" "$cpu" "$paired" "$paired_range" >>"$results"
	done
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "== setup: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), Linux $(uname -r)"
echo "   load average now: $load_before (other work on the machine makes every number noisier)"
echo "   pinning: $pinning; $rounds rounds x ${secs}s per contender, order alternating"
echo "   file stores: WAL, synchronous=$sync_level (from $sync_from), in $tmp ($(df -PT "$tmp" | awk 'NR == 2 {print $2}'))"

u=http://127.0.0.1
TOKEN_AUTH_SECRET=$(head -c 48 /dev/urandom | base64 | tr -d '\n=+/')
export TOKEN_AUTH_SECRET
password=load-test-password-1
# ---- TLS: keep-alive, and a full handshake per request --------------------------
# wrk does not resume TLS sessions, so with `Connection: close` every request
# pays a handshake (ECDHE + ECDSA P-256 signature) on a new connection.
if [ "${LOAD_ONLY:-}" != cluster ]; then
compare "TLS GET /hello, keep-alive" wrk "https://127.0.0.1:$p_demo_tls/hello" \
	"axum-server+rustls" "https://127.0.0.1:$p_axum_tls/hello"
compare "TLS GET /hello, one handshake per request" wrk "https://127.0.0.1:$p_demo_tls/hello" \
	"axum-server+rustls" "https://127.0.0.1:$p_axum_tls/hello" -- -H 'Connection: close'
fi

if [ "${LOAD_ONLY:-}" != cluster ] && [ "${LOAD_ONLY:-}" != tls ]; then
compare "router-demo GET /hello" wrk "$u:$p_demo/hello" axum "$u:$p_axum/hello" \
	"bare hyper" "$u:$p_bare/hello"
# The metrics middleware's cost: the same server with and without it.
compare "router-demo GET /hello, metrics on vs off" wrk "$u:$p_demo/hello" \
	"metrics off" "$u:$p_demo_nometrics/hello"
compare "router-demo GET /book/42" wrk "$u:$p_demo/book/42" axum "$u:$p_axum/book/42"
# One request a connection: what accepting, opening, serving and closing
# one costs (wrk reconnects after each response).
compare "router-demo GET /hello, Connection: close" wrk "$u:$p_demo/hello" axum "$u:$p_axum/hello" \
	-- -H 'Connection: close'
# The access log on: router-demo's request logger vs axum's usual logger.
compare "router-demo GET /hello, access log on" wrk "$u:$p_demo_log/hello" \
	"axum+TraceLayer" "$u:$p_axum_log/hello"
compare "router-demo GET /book/42, access log on" wrk "$u:$p_demo_log/book/42" \
	"axum+TraceLayer" "$u:$p_axum_log/book/42"
# The parameter's cost: the same server, a route with `:id` vs a static one
# (the "peer" column is /hello; the ratio is /book/42 over /hello).
compare "router-demo GET /book/42 vs GET /hello, same server" wrk "$u:$p_demo/book/42" \
	"/hello" "$u:$p_demo/hello"
# Framing alone: grpc.health.v1.Health/Check answers from memory, no store.
frame=$health_frame compare "greeter grpc.health.v1.Health/Check (framing)" h2load \
	"$u:$p_gmem/grpc.health.v1.Health/Check" tonic-health "$u:$p_tonic/grpc.health.v1.Health/Check"
# Each stored-greeting row against stateless tonic (the goal's peer) and
# against tonic storing the same rows by group commit (the same work).
compare "greeter SayHello, :memory:" h2load "$u:$p_gmem/helloworld.v1.Greeter/SayHello" \
	tonic "$u:$p_tonic/helloworld.v1.Greeter/SayHello" \
	"tonic+rusqlite group" "$u:$p_tonic_gmem/helloworld.v1.Greeter/SayHello"
compare "greeter SayHello, file DB" h2load "$u:$p_gfile/helloworld.v1.Greeter/SayHello" \
	tonic "$u:$p_tonic/helloworld.v1.Greeter/SayHello" \
	"tonic+rusqlite group" "$u:$p_tonic_gfile/helloworld.v1.Greeter/SayHello" \
	"tonic+rusqlite" "$u:$p_tonic_db/helloworld.v1.Greeter/SayHello"
compare "greeter GET /helloworld/{name}, file DB" wrk "$u:$p_gfile_http/helloworld/load" \
	"axum (no DB)" "$u:$p_axum/helloworld/load"
# Only token-auth and the 1,000-connection servers below are needed from here.
for p in "${pids[@]}"; do stop "$p"; done
pids=()

# ---- 1,000 and 10,000 keep-alive connections, with memory --------------------------
# A fresh server per measurement, so its peak RSS (VmHWM) belongs to that run.
# Socket errors (connect, read, write) and time-outs are wrk's; a server that
# cuts live connections shows there.
commas() { echo "$1" | sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta'; } # 10000 -> 10,000
many_connections() { # N: the row for N keep-alive connections on /hello
	local n=$1 label i r order pid m hwm rss errs
	label=$(commas "$n")
	if [ "$(ulimit -Sn)" -lt $((n + 512)) ]; then
		echo "== $label connections: skipped, the open-file limit is $(ulimit -Sn) (hard $(ulimit -Hn)); raise the hard limit"
		return 0
	fi
	echo "== $label keep-alive connections, GET /hello (fresh server each time; RSS = VmHWM after the run)"
	: >"$tmp/c.0"
	: >"$tmp/c.1"
	for r in $(seq "$rounds"); do
		order="0 1"
		[ $((r % 2)) = 0 ] && order="1 0"
		for i in $order; do
			if [ "$i" = 0 ]; then
				start c1k "$bin/router-demo" --addr "127.0.0.1:$p_c1k" --quiet $nolog
			else
				start c1k "$bin/examples/peer_axum" "127.0.0.1:$p_c1k"
			fi
			pid=$last_pid
			wait_http "$u:$p_c1k/hello" c1k
			m=$(wrk_run "$tmp/out" "$u:$p_c1k/hello" -c"$n" --timeout 10s)
			hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
			rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
			# connect, read, write and timeout counts of wrk's "Socket errors" line.
			errs=$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' "$tmp/out")
			stop "$pid"
			pids=()
			echo "$m $hwm $rss $(cat "$tmp/out.cpu") ${errs:-0}" >>"$tmp/c.$i"
			printf '  round %d  %-16s %10.0f req/s   p99 %7.2f ms   VmHWM %6.1f MiB  VmRSS %6.1f MiB  socket errors %d\n' \
				"$r" "${c1k_names[$i]}" $m "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')" \
				"$(awk -v k="$rss" 'BEGIN {print k / 1024}')" "${errs:-0}"
		done
	done
	for i in 0 1; do
		c_rps[$i]=$(awk '{print $1}' "$tmp/c.$i" | median)
		c_p99[$i]=$(awk '{print $2}' "$tmp/c.$i" | median)
		c_hwm[$i]=$(awk '{print $3 / 1024}' "$tmp/c.$i" | median)
		c_cpu[$i]=$(awk '{print $5}' "$tmp/c.$i" | median)
		c_err[$i]=$(awk '{s += $6} END {print s + 0}' "$tmp/c.$i")
	done
	printf '  median: handwire %.0f req/s, p99 %.2f ms, %.1f MiB peak, %d socket errors in all rounds; axum %.0f req/s, p99 %.2f ms, %.1f MiB peak, %d\n' \
		"${c_rps[0]}" "${c_p99[0]}" "${c_hwm[0]}" "${c_err[0]}" "${c_rps[1]}" "${c_p99[1]}" "${c_hwm[1]}" "${c_err[1]}"
	echo "$label connections GET /hello|${c_rps[0]}|axum|${c_rps[1]}|${c_p99[0]}|${c_p99[1]}|$(awk '{print $1}' "$tmp/c.0" | spread)|$(awk '{print $1}' "$tmp/c.1" | spread)|${c_cpu[0]}|${c_cpu[1]}" >>"$results"
	extra_rows+=("$(printf '| %s connections: peak RSS (VmHWM); socket errors and time-outs, all rounds | %.1f MiB; %d | axum | %.1f MiB; %d | %.2f | | | | | | |' \
		"$label" "${c_hwm[0]}" "${c_err[0]}" "${c_hwm[1]}" "${c_err[1]}" \
		"$(awk -v a="${c_hwm[0]}" -v b="${c_hwm[1]}" 'BEGIN {print a / b}')")")
	extra_rows+=("$(printf '| %s connections: p99 latency (median of the rounds) | %.2f ms | axum | %.2f ms | %.2f | | | | | | |' \
		"$label" "${c_p99[0]}" "${c_p99[1]}" \
		"$(awk -v a="${c_p99[0]}" -v b="${c_p99[1]}" 'BEGIN {print (b > 0) ? a / b : 0}')")")
}
c1k_names=(handwire axum)
extra_rows=()
for n in ${LOAD_CONNECTIONS:-1000 10000}; do
	if [[ "$(commas "$n") connections" =~ ${LOAD_ROWS:-.} ]]; then
		many_connections "$n"
	fi
done

if [[ "token-auth profile" =~ ${LOAD_ROWS:-.} ]]; then
# ---- token-auth: profile p99 idle vs during 20 concurrent logins -------------------
echo "== token-auth: GET /api/user/profile p99, idle vs during 20 concurrent logins (bcrypt cost 12)"
start token-auth "$bin/token-auth" --addr "127.0.0.1:$p_auth" --db "$tmp/auth.db" --quiet
auth=$u:$p_auth
for _ in $(seq 100); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$auth/api/user/profile")" = 401 ] && break
	sleep 0.1
done
register() { # USERNAME -> prints the access token
	curl -sf -H 'content-type: application/json' \
		-d "{\"username\":\"$1\",\"password\":\"$password\"}" "$auth/auth/register" |
		sed -E 's/.*"access_token":"([^"]+)".*/\1/'
}
token=$(register lt-profile)
[ -n "$token" ] || { echo "load.sh: registering on token-auth failed:" >&2; cat "$tmp/token-auth.err" >&2; exit 1; }
# The limiter allows 5 logins per minute per client IP and per username.
# Every round gets its own 20 usernames, and every login worker its own
# source address (127.0.R.N: all of 127/8 is loopback, and curl --interface
# binds to it), so each login really runs bcrypt instead of getting a 429.
echo "  registering $((20 * rounds)) login users (each a bcrypt hash) ..."
# Registration is limited per client IP too (10 a minute): each user is
# registered from the address its login worker will use.
for r in $(seq "$rounds"); do
	for n in $(seq 20); do echo "$r $n"; done
done | xargs -P 4 -L 1 sh -c 'curl -sf -o /dev/null --interface "127.0.$0.$(($1 + 10))" \
	-H "content-type: application/json" \
	-d "{\"username\":\"lt-r$0-$1\",\"password\":\"'"$password"'\"}" "'"$auth"'/auth/register"' 
login_worker() { # ROUND N: log in again and again until the stop file appears
	local codes="$tmp/login.$1.$2"
	while [ ! -e "$tmp/stop" ]; do
		"${pin_load[@]}" curl -s -o /dev/null -w '%{http_code}\n' --interface "127.0.$1.$(($2 + 10))" \
			-H 'content-type: application/json' \
			-d "{\"username\":\"lt-r$1-$2\",\"password\":\"$password\"}" "$auth/login" >>"$codes" || echo fail >>"$codes"
	done
}
profile() { wrk_run "$tmp/out" "$auth/api/user/profile" -c10 -H "Authorization: Bearer $token"; }
"${pin_load[@]}" wrk -t1 -c10 -d1s -H "Authorization: Bearer $token" "$auth/api/user/profile" >/dev/null
: >"$tmp/idle"
: >"$tmp/busy"
for r in $(seq "$rounds"); do
	for phase in $([ $((r % 2)) = 1 ] && echo "idle busy" || echo "busy idle"); do
		if [ "$phase" = idle ]; then
			m=$(profile)
			echo "$m" >>"$tmp/idle"
			printf '  round %d  idle             %10.0f req/s   p99 %7.2f ms\n' "$r" $m
		else
			rm -f "$tmp/stop"
			workers=()
			for n in $(seq 20); do
				login_worker "$r" "$n" &
				workers+=($!)
			done
			sleep 0.5 # let the 20 logins reach the server
			m=$(profile)
			touch "$tmp/stop"
			wait "${workers[@]}" # the queued logins drain before the next phase
			echo "$m" >>"$tmp/busy"
			ok=$(cat "$tmp"/login."$r".* | grep -c '^200' || true)
			other=$(cat "$tmp"/login."$r".* | grep -vc '^200' || true)
			printf '  round %d  20 logins        %10.0f req/s   p99 %7.2f ms   (logins: %d ok, %d other)\n' "$r" $m "$ok" "$other"
		fi
	done
done
idle_p99=$(awk '{print $2}' "$tmp/idle" | median)
busy_p99=$(awk '{print $2}' "$tmp/busy" | median)
idle_rps=$(awk '{print $1}' "$tmp/idle" | median)
busy_rps=$(awk '{print $1}' "$tmp/busy" | median)
auth_ratio=$(awk -v a="$busy_p99" -v b="$idle_p99" 'BEGIN {printf "%.2f", a / b}')
echo "  median p99: idle $idle_p99 ms, during logins $busy_p99 ms: loaded/idle = $auth_ratio (target <= 2)"
fi
fi # LOAD_ONLY

# ---- token-auth: several instances on PostgreSQL + Redis ---------------------------
if [ "${LOAD_CLUSTER:-1}" != 0 ] && [ "${LOAD_ONLY:-}" != tls ]; then
	. load/load-cluster.sh
fi

# ---- the table -------------------------------------------------------------------
echo
echo "== summary (markdown; $(date -u '+%Y-%m-%d'), $(nproc) cores, Linux $(uname -r), $pinning, median of $rounds x ${secs}s, synchronous=$sync_level)"
echo
echo "load average before / after the run: $load_before / $(cut -d' ' -f1-3 /proc/loadavg); req/s: median (min-max over rounds, thousands);"
echo "CPU: the server process' user + system time per request (median of the rounds); CPU ratio = peer's / handwire's (above 1: handwire spends less);"
echo "paired: the median (and range) of each round's own handwire/peer req/s, the two runs of a round seconds apart"
echo
echo "| workload | handwire req/s | peer | peer req/s | handwire/peer | paired | handwire p99 ms | peer p99 ms | handwire CPU µs/req | peer CPU µs/req | CPU ratio |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
while IFS='|' read -r title hw peer prps hp99 pp99 hrange prange hcpu pcpu paired prange2; do
	awk -v t="$title" -v h="$hw" -v p="$peer" -v r="$prps" -v a="$hp99" -v b="$pp99" -v hr="$hrange" -v pr="$prange" \
		-v hc="${hcpu:-0}" -v pc="${pcpu:-0}" -v q="${paired:-}" -v qr="${prange2:-}" \
		'BEGIN { pq = (q == "") ? "" : sprintf("%.2f (%s)", q, qr)
			printf "| %s | %.0f (%sk) | %s | %.0f (%sk) | %.2f | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", t, h, hr, p, r, pr, h / r, pq, a, b, hc, pc, (hc > 0) ? pc / hc : 0 }'
done <"$results"
[ -n "${cluster_logins:-}" ] && echo "$cluster_logins"
[ "${LOAD_ONLY:-}" = cluster ] || [ "${LOAD_ONLY:-}" = tls ] && exit 0
[ ${#extra_rows[@]} -gt 0 ] && printf '%s\n' "${extra_rows[@]}"
if [ -n "${auth_ratio:-}" ]; then printf '| token-auth profile, idle vs 20 bcrypt logins | %.0f idle, %.0f loaded | | | | | %s idle (%s), %s loaded (%s): x%s | |\n' \
	"$idle_rps" "$busy_rps" "$idle_p99" "$(awk '{print $2}' "$tmp/idle" | spread_ms)" \
	"$busy_p99" "$(awk '{print $2}' "$tmp/busy" | spread_ms)" "$auth_ratio"
fi
