#!/usr/bin/env bash
# Run every fuzz target for FUZZ_SECONDS (default 30) each, FUZZ_JOBS
# targets at a time (default 1), then print one summary line per target:
# seconds, executions, and findings (files libFuzzer left in artifacts/).
# cargo-fuzz needs nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them, since no nightly toolchain can be installed here.
set -euo pipefail
cd "$(dirname "$0")"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
secs="${FUZZ_SECONDS:-30}"
jobs="${FUZZ_JOBS:-1}"
targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
mkdir -p logs
cargo fuzz build >/dev/null
running=0
for t in $targets; do
	echo "== fuzzing $t for ${secs}s (log: fuzz/logs/$t.log)"
	cargo fuzz run "$t" -- -max_total_time="$secs" -rss_limit_mb=2048 >"logs/$t.log" 2>&1 &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait || true
found=0
echo "== summary: target, seconds, executions, findings"
for t in $targets; do
	runs=$(grep -oE 'Done [0-9]+ runs' "logs/$t.log" | grep -oE '[0-9]+' || echo "?")
	n=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
	found=$((found + n))
	printf '%-14s %6ss %12s runs %3s findings\n' "$t" "$secs" "$runs" "$n"
done
[ "$found" -eq 0 ]
