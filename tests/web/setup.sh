#!/usr/bin/env bash
# The npm tools of the browser-side tests (tests/web/package.json, exact
# versions in package-lock.json): `npm ci` once, then the gRPC-Web stubs
# generated from proto/ with buf + protoc-gen-es into tests/web/gen.
# Everything comes from the npm registry (buf's binary is an npm package).
# Prints the directory on stdout; exits non-zero (saying why on stderr)
# when npm or node is missing or the install fails, e.g. offline.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "web tools: node not found" >&2; exit 1; }
command -v npm >/dev/null || { echo "web tools: npm not found" >&2; exit 1; }
# Test binaries run in parallel: one installs, the others wait.
exec 9>".setup.lock"
flock 9
stamp="node_modules/.handwire-$(sha256sum package-lock.json | cut -c1-16)"
if [ ! -f "$stamp" ]; then
	npm ci --no-audit --no-fund --loglevel=error >&2
	touch "$stamp"
fi
if [ ! -f gen/.stamp ] || [ -n "$(find ../../proto buf.gen.yaml -newer gen/.stamp -print -quit)" ]; then
	rm -rf gen
	node_modules/.bin/buf generate >&2
	touch gen/.stamp
fi
pwd
