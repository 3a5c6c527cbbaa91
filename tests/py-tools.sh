#!/usr/bin/env bash
# The Python tools some tests check the services with, in a venv under
# target/ (made once, reused): prometheus_client's text parser for /metrics,
# grpcio with grpcio-status for the gRPC error details and the gRPC-over-TLS
# test (a client from another implementation), schemathesis for the
# OpenAPI document against the running greeter.
# Prints the venv's python on stdout; exits non-zero (saying why on stderr)
# when the venv cannot be made, e.g. offline. The tests then skip with that
# reason, unless HANDWIRE_PY_TOOLS_REQUIRED=1 (CI), where they fail.
# The venv location can be changed with HANDWIRE_PY_VENV.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${HANDWIRE_PY_VENV:-${CARGO_TARGET_DIR:-target}/venv}"
packages=(prometheus_client==0.21.1 grpcio==1.85.3 grpcio-status==1.85.3 googleapis-common-protos==1.76.0 schemathesis==4.32.5)
mkdir -p "$(dirname "$venv")"
stamp="$venv/.handwire-$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)"
# Test binaries run in parallel: one of them installs, the others wait.
exec 9>"$venv.lock"
flock 9
if [ ! -f "$stamp" ]; then
	command -v python3 >/dev/null || { echo "py-tools: python3 not found" >&2; exit 1; }
	python3 -m venv "$venv" >&2
	"$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}" >&2
	touch "$stamp"
fi
echo "$(cd "$venv" && pwd)/bin/python"
