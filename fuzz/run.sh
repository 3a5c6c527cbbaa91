#!/usr/bin/env bash
# Run every fuzz target for FUZZ_SECONDS (default 30) each.
# cargo-fuzz needs nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them, since no nightly toolchain can be installed here.
set -euo pipefail
cd "$(dirname "$0")"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
secs="${FUZZ_SECONDS:-30}"
targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
for t in $targets; do
	echo "== fuzzing $t for ${secs}s"
	RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -- -max_total_time="$secs" -rss_limit_mb=2048
done
