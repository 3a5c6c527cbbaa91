#!/usr/bin/env bash
# `make soak`: a bounded soak test (SOAK_SECONDS, default 180) on loopback.
# The three release binaries run side by side under mixed load:
#   * router-demo: wrk cycling /hello, /book/:id, /user, /food/:name,
#     /login (GET and JSON POST), /index with a token, an unknown path;
#   * greeter (file DB): h2load SayHello, plus a curl loop registering new
#     users alternately over gRPC (UserRegister) and HTTP (POST /v1/users);
#   * token-auth: a curl loop of logins (spread over usernames and source
#     addresses 127.0.2.N; the per-IP/per-username limiter answers many of
#     them with 429, which is part of the mix), profile reads with the token,
#     refreshes, and requests with a bad token.
# Every 10 s it samples each server's RSS (VmRSS) and open descriptors
# (/proc/PID/fd), prints the series and exits non-zero when a series keeps
# growing: it never goes down after the 30 s sample and its last value is
# more than 1.5 times the value at 30 s. A server that dies also fails the
# run. Processes and the temp dir are removed on exit.
# Needs wrk, h2load (nghttp2-client) and curl. SOAK_NO_BUILD=1 skips cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
. load/common.sh
secs="${SOAK_SECONDS:-180}"
port_base="${SOAK_PORT_BASE:-18560}"
need wrk "Debian: apt-get install -y wrk"
need h2load "Debian: apt-get install -y nghttp2-client"
need curl "Debian: apt-get install -y curl"
if [ "${SOAK_NO_BUILD:-}" != 1 ]; then
	need cargo "or set SOAK_NO_BUILD=1 with release binaries built"
fi
missing_tools soak.sh
if [ "$secs" -lt 60 ]; then
	echo "soak.sh: SOAK_SECONDS must be at least 60 (the growth rule compares with the 30 s sample)" >&2
	exit 1
fi
[ "${SOAK_NO_BUILD:-}" = 1 ] || cargo build --release --bins
bin=target/release

tmp=$(mktemp -d "${TMPDIR:-/tmp}/handwire-soak.XXXXXX")
pids=() loaders=()
cleanup() {
	touch "$tmp/stop" 2>/dev/null || true
	for p in "${loaders[@]}" "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${loaders[@]}" "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

p_demo=$port_base p_http=$((port_base + 1)) p_grpc=$((port_base + 2)) p_auth=$((port_base + 3))
greeter_config "$tmp/greeter.yaml" "$p_http" "$p_grpc" "$tmp/greeter.db"
TOKEN_AUTH_SECRET=$(head -c 48 /dev/urandom | base64 | tr -d '\n=+/')
export TOKEN_AUTH_SECRET
names=(router-demo greeter token-auth)
"$bin/router-demo" --addr "127.0.0.1:$p_demo" --quiet >/dev/null 2>"$tmp/router-demo.err" &
pids+=($!)
"$bin/greeter" --config "$tmp/greeter.yaml" >/dev/null 2>"$tmp/greeter.err" &
pids+=($!)
"$bin/token-auth" --addr "127.0.0.1:$p_auth" --db "$tmp/auth.db" --quiet >/dev/null 2>"$tmp/token-auth.err" &
pids+=($!)
u=http://127.0.0.1
for url in "$u:$p_demo/hello" "$u:$p_http/helloworld/up" "$u:$p_auth/nothing-here"; do
	for _ in $(seq 100); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$url")" != 000 ] && break
		sleep 0.1
	done
done

# ---- load ----------------------------------------------------------------------
cat >"$tmp/mix.lua" <<'EOF'
-- One request after another from this list, per connection.
local reqs = {
  wrk.format("GET", "/hello"),
  wrk.format("GET", "/book/42"),
  wrk.format("GET", "/user?name=soak"),
  wrk.format("GET", "/food/apple?weight=3"),
  wrk.format("GET", "/login?username=u&password=p"),
  wrk.format("POST", "/login", {["Content-Type"] = "application/json"}, '{"username":"u","password":"p"}'),
  wrk.format("GET", "/index", {["token"] = "t"}),
  wrk.format("GET", "/index"),
  wrk.format("GET", "/no/such/path"),
}
local i = 0
request = function()
  i = i % #reqs + 1
  return reqs[i]
end
EOF
wrk -t1 -c20 -d"${secs}s" -s "$tmp/mix.lua" "$u:$p_demo" >"$tmp/wrk.out" 2>&1 &
loaders+=($!)
printf '\x00\x00\x00\x00\x06\x0a\x04soak' >"$tmp/hello.bin"
h2load -t1 -c4 -m4 -D "$secs" -d "$tmp/hello.bin" -H 'content-type: application/grpc' \
	-H 'te: trailers' "$u:$p_grpc/helloworld.v1.Greeter/SayHello" >"$tmp/h2load.out" 2>&1 &
loaders+=($!)
register_loop() { # new users, alternately over gRPC and HTTP, ~10 per second
	local n=0 name frame
	while [ ! -e "$tmp/stop" ]; do
		n=$((n + 1))
		name=$(printf 'soak-%06d' "$n") # 11 bytes, so the frame length is fixed
		if [ $((n % 2)) = 0 ]; then
			# UserRegisterRequest{username: 11 bytes, password: 11 bytes} = 26 bytes.
			frame="$tmp/reg.bin"
			printf '\x00\x00\x00\x00\x1a\x0a\x0b%s\x12\x0bsoak-pw-123' "$name" >"$frame"
			curl -s --http2-prior-knowledge -o /dev/null -D - -H 'content-type: application/grpc' \
				-H 'te: trailers' --data-binary @"$frame" \
				"$u:$p_grpc/helloworld.v1.Greeter/UserRegister" | grep -i '^grpc-status' | tr -d '\r' >>"$tmp/register.codes" || true
		else
			curl -s -o /dev/null -w '%{http_code}\n' -H 'content-type: application/json' \
				-d "{\"username\":\"$name\",\"password\":\"soak-pw-123\"}" "$u:$p_http/v1/users" >>"$tmp/register.codes" || true
		fi
		sleep 0.1
	done
}
register_loop &
loaders+=($!)
auth_loop() {
	local n=0 user code tok refresh body
	password=soak-password-1
	for i in 0 1 2 3 4 5 6 7; do
		curl -s -o /dev/null -H 'content-type: application/json' \
			-d "{\"username\":\"soak-$i\",\"password\":\"$password\"}" "$u:$p_auth/auth/register" || true
	done
	tok="" refresh=""
	while [ ! -e "$tmp/stop" ]; do
		n=$((n + 1))
		user="soak-$((n % 8))"
		body=$(curl -s -w '\n%{http_code}' --interface "127.0.2.$((n % 200 + 1))" \
			-H 'content-type: application/json' \
			-d "{\"username\":\"$user\",\"password\":\"$password\"}" "$u:$p_auth/login" || echo 000)
		code=${body##*$'\n'}
		echo "login $code" >>"$tmp/auth.codes"
		if [ "$code" = 200 ]; then
			tok=$(echo "$body" | sed -nE 's/.*"access_token":"([^"]+)".*/\1/p')
			refresh=$(echo "$body" | sed -nE 's/.*"refresh_token":"([^"]+)".*/\1/p')
		fi
		if [ -n "$tok" ]; then
			for _ in 1 2 3 4 5; do
				echo "profile $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$u:$p_auth/api/user/profile")" >>"$tmp/auth.codes"
			done
		fi
		if [ -n "$refresh" ] && [ $((n % 10)) = 0 ]; then
			echo "refresh $(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' \
				-d "{\"refresh_token\":\"$refresh\"}" "$u:$p_auth/auth/refresh")" >>"$tmp/auth.codes"
		fi
		echo "bad-token $(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer x.y.z' "$u:$p_auth/api/user/profile")" >>"$tmp/auth.codes"
		sleep 0.2
	done
}
auth_loop &
loaders+=($!)

# ---- samples -----------------------------------------------------------------------
sample() { # PID -> "rss_kib fds", or "dead dead"
	if [ -r "/proc/$1/status" ]; then
		echo "$(awk '/^VmRSS/ {print $2}' "/proc/$1/status") $(ls "/proc/$1/fd" | wc -l)"
	else
		echo "dead dead"
	fi
}
echo "== soak: ${secs}s of mixed load on router-demo, greeter (file DB) and token-auth"
printf '%6s' "t(s)"
for n in "${names[@]}"; do printf ' %14s %5s' "$n RSS KiB" "fds"; done
echo
: >"$tmp/series"
t=0
while [ "$t" -le "$secs" ]; do
	line="$t"
	for p in "${pids[@]}"; do line="$line $(sample "$p")"; done
	echo "$line" >>"$tmp/series"
	printf '%6s' "$t"
	set -- $line
	shift
	while [ $# -gt 0 ]; do printf ' %14s %5s' "$1" "$2"; shift 2; done
	echo
	[ "$t" -ge "$secs" ] && break
	sleep 10
	t=$((t + 10))
done
touch "$tmp/stop"
for p in "${loaders[@]}"; do wait "$p" 2>/dev/null || true; done
loaders=()
sleep 2
line="idle"
for p in "${pids[@]}"; do line="$line $(sample "$p")"; done
printf '%6s' "+2s"
set -- $line
shift
while [ $# -gt 0 ]; do printf ' %14s %5s' "$1" "$2"; shift 2; done
echo "   (2 s after the load stopped; not part of the rule)"

# ---- verdict ---------------------------------------------------------------------
echo
echo "== load generators"
grep -E 'Requests/sec|requests in|Non-2xx|Socket errors' "$tmp/wrk.out" | sed 's/^/  wrk (router-demo):  /'
grep -E '^finished in|^requests:' "$tmp/h2load.out" | sed 's/^/  h2load (greeter):   /'
echo "  registrations:      $(sort "$tmp/register.codes" | uniq -c | tr -s ' ' | tr '\n' ';')"
echo "  token-auth:         $(sort "$tmp/auth.codes" | uniq -c | tr -s ' ' | tr '\n' ';')"
status=0
col=2
for n in "${names[@]}"; do
	for what in RSS fds; do
		verdict=$(awk -v c="$col" '
			$1 == "idle" { next }
			$c == "dead" { print "died"; exit }
			$1 >= 30 { v[++k] = $c }
			END {
				if (k < 2) { print "ok"; exit }
				mono = 1
				for (i = 2; i <= k; i++) if (v[i] < v[i - 1]) mono = 0
				if (mono && v[k] > 1.5 * v[1]) print "growing (" v[1] " at 30 s -> " v[k] ")"
				else printf "ok (%s at 30 s -> %s, x%.2f)\n", v[1], v[k], v[k] / v[1]
			}' "$tmp/series")
		echo "  $n $what: $verdict"
		case "$verdict" in ok*) ;; *) status=1 ;; esac
		col=$((col + 1))
	done
done
for i in "${!pids[@]}"; do
	if ! kill -0 "${pids[$i]}" 2>/dev/null; then
		echo "  ${names[$i]} is not running any more; its stderr:" >&2
		cat "$tmp/${names[$i]}.err" >&2
		status=1
	fi
done
if [ "$status" = 0 ]; then echo "soak: PASS"; else echo "soak: FAIL" >&2; fi
exit "$status"
