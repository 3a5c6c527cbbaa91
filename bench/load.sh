#!/usr/bin/env bash
# Load test on loopback only: router-demo's GET /hello (router + chain +
# logger + recovery) against examples/bare_hyper (same accept loop, no
# framework), one after the other in the same run, with wrk.
# Bounded: LOAD_SECONDS (default 5) per target, LOAD_CONNECTIONS (default 32).
# Prints requests/s of each and the ratio handwire/bare.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${LOAD_SECONDS:-5}"
conns="${LOAD_CONNECTIONS:-32}"
if ! command -v wrk >/dev/null; then
	echo "load.sh: wrk is not installed (Debian: apt-get install -y wrk)" >&2
	exit 1
fi
cargo build --release --bin router-demo --example bare_hyper
demo_port=18471
bare_port=18472
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
# The request log goes to /dev/null: this measures serving, not the terminal.
target/release/router-demo --addr "127.0.0.1:$demo_port" >/dev/null 2>&1 &
pids+=($!)
target/release/examples/bare_hyper "127.0.0.1:$bare_port" >/dev/null 2>&1 &
pids+=($!)
for port in $demo_port $bare_port; do
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:$port/hello" >/dev/null && break
		sleep 0.1
	done
done
rps() {
	wrk -t2 -c"$conns" -d"${secs}s" "$1" | awk '/Requests\/sec/ {print $2}'
}
demo=$(rps "http://127.0.0.1:$demo_port/hello")
bare=$(rps "http://127.0.0.1:$bare_port/hello")
echo "router-demo /hello: $demo req/s"
echo "bare hyper:         $bare req/s"
awk -v a="$demo" -v b="$bare" 'BEGIN { printf "throughput ratio handwire/bare = %.2f\n", a / b }'
