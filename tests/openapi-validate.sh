#!/usr/bin/env bash
# Validates OpenAPI documents with openapi-spec-validator (PyPI), installed
# into a venv under target/venv on first use.
# Usage: bash tests/openapi-validate.sh FILE...
# Exit status: 0 valid, 1 invalid (the validator's message on stdout),
# 3 the validator could not be installed (no python3 venv, no PyPI): the
# caller decides whether that skips or fails (HANDWIRE_PY_TOOLS_REQUIRED=1).
set -uo pipefail
cd "$(dirname "$0")/.."
venv="${HANDWIRE_VENV:-target/venv}"
version="0.7.1"
mkdir -p "$(dirname "$venv")"
# Tests run in parallel: one installs, the others wait for it.
{ exec 9>"$venv.lock"; } 2>/dev/null && command -v flock >/dev/null && flock 9
if ! "$venv/bin/python" -c 'import openapi_spec_validator' 2>/dev/null; then
  if ! { python3 -m venv "$venv" >&2 &&
         "$venv/bin/pip" install --quiet --disable-pip-version-check \
           "openapi-spec-validator==$version" >&2; }; then
    echo "openapi-validate: cannot install openapi-spec-validator $version into $venv" >&2
    exit 3
  fi
fi
exec 9>&-
status=0
for file in "$@"; do
  if ! "$venv/bin/python" -m openapi_spec_validator "$file"; then
    status=1
  fi
done
exit "$status"
