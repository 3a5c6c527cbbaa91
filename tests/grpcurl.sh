#!/usr/bin/env bash
# End-to-end check of the greeter's gRPC side with grpcurl: every RPC through
# the .proto file (-proto) and through server reflection (list, describe,
# calls), asserting the output. Starts the built binary itself on free ports
# with a temporary config and store. Exits non-zero on any mismatch.
#
# grpcurl is taken from $GRPCURL, else from PATH (tests/install-grpcurl.sh
# installs one). The greeter binary from $GREETER_BIN, else target/debug/greeter
# (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

grpcurl="${GRPCURL:-$(command -v grpcurl || true)}"
[ -n "$grpcurl" ] && [ -x "$grpcurl" ] || { echo "grpcurl.sh: grpcurl not found (set GRPCURL or run tests/install-grpcurl.sh)" >&2; exit 2; }
bin="${GREETER_BIN:-target/debug/greeter}"
[ -x "$bin" ] || cargo build --quiet --bin greeter

tmp="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

cat > "$tmp/config.yaml" <<YAML
server:
  http: { network: tcp, addr: 127.0.0.1:0, timeout: 1s }
  grpc: { network: tcp, addr: 127.0.0.1:0, timeout: 1s }
data:
  database: { driver: sqlite3, source: "$tmp/greeter.db" }
  cache: { network: tcp, addr: 127.0.0.1:6379, read_timeout: 0.2s, write_timeout: 0.2s }
# This script registers more users than one address may in a minute.
limits: { registrations_per_minute: 0 }
YAML

"$bin" --config "$tmp/config.yaml" > "$tmp/out.log" 2> "$tmp/err.log" &
pid=$!
addr=""
for _ in $(seq 100); do
  addr="$(sed -n 's/^greeter: gRPC listening on //p' "$tmp/out.log")"
  [ -n "$addr" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/err.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "grpcurl.sh: greeter did not start" >&2; exit 1; }

failures=0
passes=0
pass() { echo "ok   - $1"; passes=$((passes + 1)); }
fail() { echo "FAIL - $1"; echo "       expected: $2"; echo "       got:      $3"; failures=$((failures + 1)); }
# JSON normalized (sorted keys, no whitespace) so layout does not matter.
norm() { python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read() or "null"), sort_keys=True, separators=(",", ":")))'; }

reflect() { "$grpcurl" -plaintext "$@"; }
with_proto() { "$grpcurl" -plaintext -import-path proto -proto helloworld/v1/greeter.proto "$@"; }

# call NAME EXPECTED_JSON MODE DATA METHOD
call() {
  local name="$1" want="$2" mode="$3" data="$4" method="$5" got
  got="$($mode -d "$data" "$addr" "helloworld.v1.Greeter/$method" 2>&1)" || true
  if [ "$(printf '%s' "$got" | norm 2>/dev/null)" = "$(printf '%s' "$want" | norm)" ]; then pass "$name"; else fail "$name" "$want" "$got"; fi
}
# call_err NAME CODE MODE DATA METHOD: the call must fail with CODE.
call_err() {
  local name="$1" code="$2" mode="$3" data="$4" method="$5" got
  if got="$($mode -d "$data" "$addr" "helloworld.v1.Greeter/$method" 2>&1)"; then
    fail "$name" "Code: $code" "success: $got"
  elif grep -q "Code: $code" <<<"$got"; then pass "$name"; else fail "$name" "Code: $code" "$got"; fi
}
# has NAME NEEDLE TEXT
has() { if grep -qF -- "$2" <<<"$3"; then pass "$1"; else fail "$1" "$2" "$3"; fi; }

# Reflection: list and describe.
got="$(reflect "$addr" list 2>&1)" || true
want=$'grpc.health.v1.Health\ngrpc.reflection.v1.ServerReflection\ngrpc.reflection.v1alpha.ServerReflection\nhelloworld.v1.Greeter'
if [ "$got" = "$want" ]; then pass "list services"; else fail "list services" "$want" "$got"; fi
got="$(reflect "$addr" list helloworld.v1.Greeter 2>&1)" || true
want=$'helloworld.v1.Greeter.SayHello\nhelloworld.v1.Greeter.SayHelloAgain\nhelloworld.v1.Greeter.UserList\nhelloworld.v1.Greeter.UserRegister'
if [ "$got" = "$want" ]; then pass "list methods"; else fail "list methods" "$want" "$got"; fi
got="$(reflect "$addr" describe helloworld.v1.Greeter 2>&1)" || true
has "describe service" "helloworld.v1.Greeter is a service:" "$got"
has "describe SayHello" "rpc SayHello ( .helloworld.v1.HelloRequest ) returns ( .helloworld.v1.HelloReply );" "$got"
has "describe UserRegister" "rpc UserRegister ( .helloworld.v1.UserRegisterRequest ) returns ( .helloworld.v1.UserRegisterResponse );" "$got"
has "describe UserList" "rpc UserList ( .helloworld.v1.UserListRequest ) returns ( .helloworld.v1.UserListResponse );" "$got"
got="$(reflect "$addr" describe helloworld.v1.UserListResponse 2>&1)" || true
has "describe message" "repeated .helloworld.v1.User users = 1;" "$got"
# The google/api files greeter.proto imports are served too.
got="$(reflect "$addr" describe google.api.HttpRule 2>&1)" || true
has "describe google.api.HttpRule" "google.api.HttpRule is a message:" "$got"
has "HttpRule.additional_bindings" "repeated .google.api.HttpRule additional_bindings = 11;" "$got"

# Every RPC through reflection and through -proto.
call "SayHello (reflection)" '{"message":"Hello grpcurl"}' reflect '{"name":"grpcurl"}' SayHello
call "SayHello (-proto)" '{"message":"Hello wörld"}' with_proto '{"name":"wörld"}' SayHello
call "SayHelloAgain (reflection)" '{"message":"Hello again grpcurl"}' reflect '{"name":"grpcurl"}' SayHelloAgain
call "SayHelloAgain (-proto)" '{"message":"Hello again proto"}' with_proto '{"name":"proto"}' SayHelloAgain
call_err "SayHelloAgain empty name" InvalidArgument reflect '{}' SayHelloAgain
call "UserRegister (reflection)" '{"result":"success"}' reflect '{"username":"ann","password":"pw1"}' UserRegister
call "UserRegister (-proto)" '{"result":"success"}' with_proto '{"username":"bob","password":"pw2"}' UserRegister
call_err "UserRegister duplicate" AlreadyExists reflect '{"username":"ann","password":"x"}' UserRegister
call_err "UserRegister empty username" InvalidArgument with_proto '{"username":"","password":"x"}' UserRegister
call_err "UserRegister empty password" InvalidArgument reflect '{"username":"cid"}' UserRegister
want='{"users":[{"username":"ann","password":"pw1"},{"username":"bob","password":"pw2"}]}'
call "UserList (reflection)" "$want" reflect '{}' UserList
call "UserList (-proto)" "$want" with_proto '{}' UserList

# The health service (grpc.health.v1.Health), as probes call it.
health() { # NAME EXPECTED_JSON MODE [grpcurl args...] METHOD
  local name="$1" want="$2" mode="$3" got
  shift 3
  got="$($mode "${@:1:$#-1}" "$addr" "grpc.health.v1.Health/${!#}" 2>&1)" || true
  if [ "$(printf '%s' "$got" | norm 2>/dev/null)" = "$(printf '%s' "$want" | norm)" ]; then pass "$name"; else fail "$name" "$want" "$got"; fi
}
health_proto() { "$grpcurl" -plaintext -import-path proto -proto grpc/health/v1/health.proto "$@"; }
health "Health/Check, no request body (reflection)" '{"status":"SERVING"}' reflect Check
health "Health/Check greeter (-proto)" '{"status":"SERVING"}' health_proto -d '{"service":"helloworld.v1.Greeter"}' Check
health "Health/List (reflection)" '{"statuses":{"":{"status":"SERVING"},"helloworld.v1.Greeter":{"status":"SERVING"}}}' reflect List
got="$(reflect -d '{"service":"no.Such"}' "$addr" grpc.health.v1.Health/Check 2>&1)" || true
has "Health/Check unknown service is NotFound" "Code: NotFound" "$got"
got="$(reflect "$addr" list grpc.health.v1.Health 2>&1)" || true
want=$'grpc.health.v1.Health.Check\ngrpc.health.v1.Health.List\ngrpc.health.v1.Health.Watch'
if [ "$got" = "$want" ]; then pass "list health methods"; else fail "list health methods" "$want" "$got"; fi
# Watch stays open: grpcurl prints the first status, then its -max-time ends it.
got="$(health_proto -max-time 1 -d '{"service":"helloworld.v1.Greeter"}' "$addr" grpc.health.v1.Health/Watch 2>&1)" || true
has "Health/Watch sends the status at once" '"status": "SERVING"' "$got"
got="$(health_proto -max-time 1 -d '{"service":"later.Service"}' "$addr" grpc.health.v1.Health/Watch 2>&1)" || true
has "Health/Watch of an unknown service" '"status": "SERVICE_UNKNOWN"' "$got"

# gzip: grpcurl 1.8.6 neither compresses requests nor lists gzip in
# grpc-accept-encoding, so it checks the other half of the negotiation: the
# server advertises gzip, and a reply over 1 KiB to a client that did not
# list gzip comes back plain. (tests/greeter_gzip.rs covers gzip both ways
# with tonic.)
for i in $(seq 30); do
  reflect -d "{\"username\":\"gzip-user-$i-with-a-long-name\",\"password\":\"pw-$i\"}" "$addr" helloworld.v1.Greeter/UserRegister >/dev/null 2>&1 || true
done
got="$(reflect -v -d '{}' "$addr" helloworld.v1.Greeter/UserList 2>&1)" || true
has "every response advertises grpc-accept-encoding: identity, gzip" "grpc-accept-encoding: identity, gzip" "$got"
has "a large UserList reaches a client that does not take gzip" "gzip-user-30-with-a-long-name" "$got"
if grep -qi "^grpc-encoding: gzip" <<<"$got"; then fail "no gzip reply unless the client lists gzip" "no grpc-encoding: gzip" "$got"; else pass "no gzip reply unless the client lists gzip"; fi

echo "grpcurl.sh: checked with $("$grpcurl" -version 2>&1)"
echo "grpcurl: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
