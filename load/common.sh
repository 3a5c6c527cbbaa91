# Shared by load.sh, soak.sh and instructions.sh (sourced, not run): the
# greeter's configuration, the gRPC calls they send, and their check for
# the tools they need.

# greeter_config FILE HTTP_PORT GRPC_PORT SOURCE: a greeter config on
# loopback with the database at SOURCE (a path or ":memory:").
greeter_config() {
	cat >"$1" <<EOF2
server:
  http: {network: tcp, addr: "127.0.0.1:$2", timeout: 1s}
  grpc: {network: tcp, addr: "127.0.0.1:$3", timeout: 1s}
data:
  database: {driver: sqlite3, source: "$4"}
  cache: {network: tcp, addr: "127.0.0.1:6379", read_timeout: 0.2s, write_timeout: 0.2s}
EOF2
}

# write_sayhello_frame FILE: SayHello{name:"world"} as one gRPC message: flag 0,
# big-endian length 7, then field 1 (tag 0x0a), length 5, "world".
write_sayhello_frame() { printf '\x00\x00\x00\x00\x07\x0a\x05world' >"$1"; }

# write_health_frame FILE: Health/Check{service: ""}: an empty message, one gRPC
# frame of length 0.
write_health_frame() { printf '\x00\x00\x00\x00\x00' >"$1"; }

# need TOOL HINT: note TOOL (with HINT: how to get it) as missing unless it
# is on PATH; then missing_tools NAME stops the script, listing them all.
missing=()
need() { command -v "$1" >/dev/null || missing+=("$1 ($2)"); }

# missing_tools SCRIPT: exit 1 naming every tool need() found missing.
missing_tools() {
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "$1: missing tool(s):" >&2
	printf '  - %s\n' "${missing[@]}" >&2
	exit 1
}
