#!/usr/bin/env bash
# `make demo`: runs the examples of README.md and docs/*.md against the three
# real services and checks every answer against what the page says it is,
# twice, as a newcomer following the README would: the second round after
# stopping the services, `make reset` and starting them again.
#
# 1. Builds the binaries, makes a work directory that stands for the
#    repository's root (config.yaml with both greeter addresses on
#    127.0.0.1:0, a link to proto/), starts greeter, router-demo and
#    token-auth there as `make run`, `make run-router` and `make run-auth`
#    do (default databases ./greeter.db and ./token-auth.db, a demo-only
#    secret) and reads their addresses from their start-up lines. token-auth
#    runs as docs/token-auth.md's OAuth walk-through starts it: with the
#    `--config` that examples/fake_oauth_provider prints (the provider runs
#    too, on loopback) and a demo-only TOKEN_AUTH_ENC_KEY. Two variants
#    run beside them: router-demo over TLS (a certificate from
#    examples/dev_cert.rs in /tmp/tls/) and token-auth verifying captchas at
#    examples/fake_captcha_provider.rs (`localhost:9300` in the pages).
# 2. Runs, in order, every line of the ```sh demo SERVICE blocks of README.md
#    then docs/*.md, in the work directory, with `localhost:8000` /
#    `127.0.0.1:8000` replaced by that SERVICE's address, `localhost:9000` by
#    the greeter's gRPC address and `/tmp/` by the temporary directory. Shell
#    variables carry values (tokens) from one line to the next.
# 3. Each curl / grpcurl command there is followed by its expectation:
#
#        curl -s localhost:8000/helloworld/kratos
#        # 200 {"message":"Hello kratos"}
#        # Content-Type: application/json…        (optional header lines)
#
#    STATUS is the HTTP status (curl) or the gRPC code name (grpcurl: OK,
#    AlreadyExists, ...); BODY is optional. JSON bodies are compared by shape
#    (same keys, same types, equal values) where `…` in a string matches any
#    text, a bare `…` any value and `[…]` any array; text bodies are compared
#    with whitespace runs collapsed, `…` matching any text. For a failing
#    grpcurl call the body is the error message. tests/demo_readme.py parses
#    and compares.
#    A ```sh demo example block runs a study example (`cargo run --example
#    NAME`) instead: the ```text block right after it is its expected
#    stdout, line by line, `…` matching any text; it must exit 0.
# 4. Stops the services, runs `make reset` in the work directory (which must
#    remove both databases) and does 1-3 again.
# 5. Runs each study example drawn in docs/walks/ with HANDWIRE_WALK_SVG
#    and compares the picture it writes with the committed one (a changed
#    picture is written over, to commit, and counts as failed).
# 6. Prints every command with its answer, then `demo: N passed, M failed`,
#    and exits non-zero if anything differed. Processes and files are removed
#    on every exit path.
#
# grpcurl: $GRPCURL, else `grpcurl` on PATH, else tests/install-grpcurl.sh.
# jq: used by the README; when it is not installed, a python3 stand-in that
# knows `jq -r .a.b [FILE]` takes its place. DEMO_MAX_TIME bounds each request
# (seconds, default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

CARGO="${CARGO:-cargo}"
max_time="${DEMO_MAX_TIME:-10}"
bin_dir="$(realpath "${CARGO_TARGET_DIR:-target}")/debug"
pages=(README.md docs/*.md)

echo "demo: building the binaries, the fake OAuth and captcha providers and the dev certificate tool"
"$CARGO" build --quiet --bins --example fake_oauth_provider --example dev_cert --example fake_captcha_provider

grpcurl_bin="${GRPCURL:-$(command -v grpcurl || true)}"
if [ -z "$grpcurl_bin" ]; then
	echo "demo: grpcurl not found; installing it (tests/install-grpcurl.sh)"
	grpcurl_bin="$(bash tests/install-grpcurl.sh)"
fi
[ -x "$grpcurl_bin" ] || { echo "demo: grpcurl at '$grpcurl_bin' is not executable" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/handwire-demo.XXXXXX")"
work="$tmp/work"
mkdir "$work"
ln -s "$repo/proto" "$work/proto"
pids=()
# stop_all: SIGTERM to every started process, then waits for each.
stop_all() {
	local pid n
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do
		# Graceful shutdown first; a process still there after 5 s is killed.
		for ((n = 0; n < 50; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	pids=()
}
cleanup() {
	local rc=$?
	stop_all
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME COMMAND...: runs it in the background in the work directory,
# output in $tmp/NAME.{out,err}.
start() {
	local name="$1"
	shift
	: >"$tmp/$name.out"
	(cd "$work" && exec "$@") >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pids+=("$!")
}

# address NAME SED_REGEX: waits (30 s at most) for the start-up line of the
# last started process and prints the address captured by \1. Other lines
# (route tables, request logs) are ignored.
address() {
	local name="$1" regex="$2" pid="${pids[-1]}" addr n
	for ((n = 0; n < 300; n++)); do
		addr="$(sed -n "s#$regex#\\1#p" "$tmp/$name.out" | head -n 1)"
		if [ -n "$addr" ]; then
			echo "$addr"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "demo: $name exited at start-up:" >&2
			cat "$tmp/$name.err" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "demo: $name printed no address within 30 s" >&2
	return 1
}

# The greeter: the repo's config.yaml with both servers on 127.0.0.1:0; its
# database stays data.database.source (greeter.db), in the work directory.
sed -e '/^server:/,/^[^[:space:]#]/ s#^\([[:space:]]*addr:[[:space:]]*\).*#\1127.0.0.1:0#' \
	config.yaml >"$work/config.yaml"
if [ "$(grep -c 'addr: 127.0.0.1:0$' "$work/config.yaml")" != 2 ]; then
	echo "demo: could not rewrite config.yaml (server.*.addr):" >&2
	cat "$work/config.yaml" >&2
	exit 1
fi
# DEMO ONLY: a throw-away signing secret and provider-token key made for
# this run, never stored.
demo_secret="demo-only-not-a-real-secret-$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
demo_enc_key="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"

# start_all: the three services as the Makefile starts them, their addresses
# in greeter_http, greeter_grpc, router_http, auth_http.
start_all() {
	start greeter "$bin_dir/greeter" --config config.yaml
	greeter_http="$(address greeter '^greeter: HTTP listening on \(.*\)$')"
	greeter_grpc="$(address greeter '^greeter: gRPC listening on \(.*\)$')"

	start router "$bin_dir/router-demo" --addr 127.0.0.1:0
	router_http="$(address router '^router-demo listening on http://\(.*\)$')"

	# The provider must know token-auth's callback before token-auth starts
	# with the provider's config: token-auth gets a port chosen here.
	local auth_port
	auth_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
	start provider "$bin_dir/examples/fake_oauth_provider" --addr 127.0.0.1:0 \
		--redirect-uri "http://127.0.0.1:$auth_port/auth/oauth/github/callback"
	address provider '^\(--- Ctrl-C to stop ---\)$' >/dev/null
	# The "oauth:" block it prints, as the page says to copy it.
	sed -n '/^oauth:$/,/^---/p' "$tmp/provider.out" | sed '$d' >"$work/auth.yaml"
	start auth env TOKEN_AUTH_SECRET="$demo_secret" TOKEN_AUTH_ENC_KEY="$demo_enc_key" \
		"$bin_dir/token-auth" --addr "127.0.0.1:$auth_port" --config auth.yaml
	auth_http="$(address auth '^token-auth listening on http://\(.*\)$')"

	# router-demo once more over TLS, with a development certificate in
	# $tmp/tls/ (what the README's TLS lines make): the ```sh demo
	# router-demo-tls blocks, which trust /tmp/tls/ca.pem.
	"$bin_dir/examples/dev_cert" "$tmp/tls" >/dev/null
	start router-tls "$bin_dir/router-demo" --addr 127.0.0.1:0 --quiet \
		--tls-cert "$tmp/tls/cert.pem" --tls-key "$tmp/tls/key.pem"
	router_tls="$(address router-tls '^router-demo listening on https://\(.*\)$')"

	# token-auth once more, verifying captchas at the fake provider of
	# examples/fake_captcha_provider.rs: the ```sh demo token-auth-captcha
	# blocks, where localhost:9300 is the provider. Its own database,
	# fresh each round.
	start captcha "$bin_dir/examples/fake_captcha_provider" --addr 127.0.0.1:0 --secret demo-captcha-secret
	captcha_http="$(address captcha '^fake captcha provider listening on http://\(.*\)$')"
	printf 'captcha:\n  verify_url: http://%s/siteverify\n  secret: demo-captcha-secret\n  hostname: localhost\n  action: login\n' \
		"$captcha_http" >"$tmp/captcha.yaml"
	rm -f "$tmp/captcha.db" "$tmp/captcha.db-wal" "$tmp/captcha.db-shm"
	start auth-captcha env TOKEN_AUTH_SECRET="$demo_secret" "$bin_dir/token-auth" --addr 127.0.0.1:0 \
		--quiet --db "$tmp/captcha.db" --config "$tmp/captcha.yaml"
	auth_captcha="$(address auth-captcha '^token-auth listening on http://\(.*\)$')"

	echo "demo: greeter HTTP $greeter_http, gRPC $greeter_grpc; router-demo $router_http (TLS $router_tls); token-auth $auth_http (captcha $auth_captcha, provider $captcha_http)"
}

# What the README's commands run as. Each request is bounded in time; curl
# also writes the response head to $tmp/head for the status and headers.
curl() { command curl --silent --show-error --max-time "$max_time" -D "$tmp/head" "$@"; }
grpcurl() { "$grpcurl_bin" -max-time "$max_time" "$@"; }
# `cargo run [-q] --bin NAME -- ARGS` runs the binary built above;
# `cargo run [-q] --example NAME` builds the study example if needed and runs it.
cargo() {
	local name="" example=""
	[ "${1:-}" = run ] || { echo "demo: README demo blocks may only use 'cargo run --bin NAME -- ARGS'" >&2; return 2; }
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		-q | --quiet) shift ;;
		--bin) name="$2"; shift 2 ;;
		--example) example="$2"; shift 2 ;;
		--) shift; break ;;
		*) echo "demo: unsupported cargo option $1" >&2; return 2 ;;
		esac
	done
	if [ -n "$example" ]; then
		# `command`: $CARGO is usually `cargo`, which is this function.
		command "$CARGO" run --quiet --manifest-path "$repo/Cargo.toml" --example "$example" -- "$@"
		return
	fi
	"$bin_dir/$name" "$@"
}
if ! command -v jq >/dev/null 2>&1; then
	jq() {
		python3 -c '
import json, sys
args = [a for a in sys.argv[1:] if a != "-r"]
path, files = args[0], args[1:]
data = json.load(open(files[0])) if files else json.load(sys.stdin)
for key in filter(None, path.split(".")):
    data = data.get(key) if isinstance(data, dict) else None
print(data if isinstance(data, str) else json.dumps(data))
' "$@"
	}
fi

indent() { sed 's/^/      /'; }
# answer STATUS FILE: "  -> STATUS body", a body of several lines indented below.
answer() {
	if [ "$(wc -l <"$2")" -le 1 ]; then
		echo "  -> $1 $(head -c 2000 "$2")"
	else
		echo "  -> $1"
		head -c 2000 "$2" | indent
	fi
}

passed=0
failed=0
out="$tmp/out"
err="$tmp/err"
# run_round N: extracts the steps for the running services and runs them.
run_round() {
	local steps="$tmp/steps$1"
	mkdir "$steps"
	python3 tests/demo_readme.py extract "$steps" "${pages[@]}" -- \
		GREETER_HTTP="$greeter_http" GREETER_GRPC="$greeter_grpc" \
		ROUTER_HTTP="$router_http" ROUTER_TLS="$router_tls" AUTH_HTTP="$auth_http" \
		AUTH_CAPTCHA="$auth_captcha" CAPTCHA="$captcha_http" TMP="$tmp/" >/dev/null
	cd "$work"
	set +eu # the pages' lines run as a person's shell would run them
	for script in "$steps"/*.sh; do
		cmd="$(<"$script")"
		expect="${script%.sh}.json"
		echo "\$ $cmd"
		: >"$tmp/head"
		if eval "$cmd" >"$out" 2>"$err"; then rc=0; else rc=$?; fi
		if [ ! -f "$expect" ]; then
			# A plain shell line (an assignment, create-admin, ...): it must succeed.
			[ -s "$out" ] && indent <"$out"
			if [ "$rc" -ne 0 ]; then
				echo "  FAIL: exit status $rc"
				indent <"$err"
				failed=$((failed + 1))
			fi
			continue
		fi
		if [[ "$cmd" == cargo* ]]; then
			status="exit $rc"
		elif [[ "$cmd" == grpcurl* ]]; then
			if [ "$rc" -eq 0 ]; then
				status=OK
			else
				status="$(sed -n 's/^ *Code: //p' "$err" | head -n 1)"
				[ -n "$status" ] || status="grpcurl-exit-$rc"
				sed -n 's/^ *Message: //p' "$err" >"$out"
			fi
		else
			status="$(awk '/^HTTP\//{s=$2} END{print s}' "$tmp/head")"
			[ -n "$status" ] || status="no-response(curl-exit-$rc)"
			if [[ " $cmd " =~ [[:space:]](-i|--include)[[:space:]] ]]; then
				# -i puts the head in front of the body; the check wants the body.
				tail -c "+$(($(wc -c <"$tmp/head") + 1))" "$out" >"$out.body" && mv "$out.body" "$out"
			fi
		fi
		answer "$status" "$out"
		if why="$(python3 "$repo/tests/demo_readme.py" check "$expect" "$status" "$out" "$tmp/head")"; then
			passed=$((passed + 1))
		else
			line="$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print(e["line"], e["status"], e["body"] or "")' "$expect")"
			echo "  FAIL (${line%% *}): expected ${line#* }"
			printf '%s\n' "$why" | indent
			[ -s "$err" ] && indent <"$err"
			failed=$((failed + 1))
		fi
	done
	set -eu

	cd "$repo"
}

echo "demo: round 1, fresh databases"
start_all
run_round 1
echo "demo: round 2: the services stopped, \`make reset\`, started again"
stop_all
(cd "$work" && make --no-print-directory -f "$repo/Makefile" reset)
for db in greeter.db token-auth.db; do
	if [ -e "$work/$db" ]; then
		echo "  FAIL: make reset left $db"
		failed=$((failed + 1))
	fi
done
start_all
run_round 2

# The pictures of docs/walks/: each study example writes its walks again;
# a picture that changed is written over (commit it) and counts as failed.
echo "demo: the study examples' walks, drawn (docs/walks/)"
mkdir "$tmp/walks"
for svg in docs/walks/*.svg; do
	example="$(basename "$svg" .svg)"
	if ! HANDWIRE_WALK_SVG="$tmp/walks/$example.svg" command "$CARGO" run --quiet --example "$example" >/dev/null 2>"$err"; then
		echo "  FAIL: cargo run --example $example"
		indent <"$err"
		failed=$((failed + 1))
	elif cmp -s "$tmp/walks/$example.svg" "$svg"; then
		echo "  $svg: as drawn"
		passed=$((passed + 1))
	else
		cp "$tmp/walks/$example.svg" "$svg"
		echo "  FAIL: $svg was not what examples/$example.rs draws; written again, commit it"
		failed=$((failed + 1))
	fi
done

echo "demo: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
