# Sourced by load/load.sh (uses its start/stop/wrk_run/median/spread and
# $tmp, $bin, $rounds, $secs, $u, $results): token-auth as two instances on
# one PostgreSQL + Redis (feature `cluster`), next to one instance on SQLite,
# so the cost of the shared blacklist check and of the shared login limiter
# is a measured number.
#
# PostgreSQL (initdb/pg_ctl through `runuser -u postgres` when root, as it
# refuses to run as root) and Redis get a private directory and ports
# LOAD_PORT_BASE+60/+61 on 127.0.0.1, pinned with the servers (core 0); both
# are stopped and removed at exit. PostgreSQL runs with its defaults
# (fsync on). Skipped, saying why, when the servers are not installed or the
# binary was built without the feature.
#
# Workloads (rounds alternate the order, as everywhere in load.sh):
# * GET /api/user/profile with a valid token (signature + blacklist look-up):
#   SQLite, one instance on PostgreSQL, and both instances at once (two wrk,
#   -c25 each, req/s summed, p99 the larger).
# * POST /login past the limit (every answer a 429): the limiter check alone,
#   in memory vs a Redis script round trip.
# * Successful logins (bcrypt cost 12): 5 in a row per round, mean ms.

p_pg=$((port_base + 60)) p_redis=$((port_base + 61))
p_ta_sqlite=$((port_base + 62)) p_ta_a=$((port_base + 63)) p_ta_b=$((port_base + 64))
cluster_skip=""
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$pg_bin" ] || ! command -v redis-server >/dev/null; then
	cluster_skip="PostgreSQL or redis-server is not installed (apt-get install postgresql redis-server)"
elif TOKEN_AUTH_SECRET=$TOKEN_AUTH_SECRET "$bin/token-auth" --addr 127.0.0.1:0 \
	--db postgres://u:p@127.0.0.1:1/x 2>&1 | grep -q 'built without'; then
	cluster_skip="$bin/token-auth was built without --features cluster"
fi

pgdir=""
cluster_cleanup() {
	[ -n "$pgdir" ] || return 0
	"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pgdir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$pgdir"
}

if [ -n "$cluster_skip" ]; then
	echo "== token-auth on PostgreSQL + Redis: skipped: $cluster_skip"
else
	echo "== token-auth: two instances on PostgreSQL + Redis vs one on SQLite"
	# Not under $tmp: the postgres user must be able to reach it.
	pgdir=$(mktemp -d /tmp/handwire-load-pg.XXXXXX)
	pg_password=$(head -c 18 /dev/urandom | base64 | tr -d '\n=+/')
	printf '%s' "$pg_password" >"$pgdir/pw"
	as_pg=()
	if [ "$(id -u)" = 0 ]; then
		chown -R postgres:postgres "$pgdir"
		as_pg=(runuser -u postgres --)
	fi
	"${as_pg[@]}" "$pg_bin/initdb" -D "$pgdir/data" -U handwire --auth-local=trust \
		--auth-host=scram-sha-256 --pwfile="$pgdir/pw" -E UTF8 >"$tmp/initdb.log" 2>&1 ||
		{ cat "$tmp/initdb.log" >&2; exit 1; }
	"${as_pg[@]}" "${pin_server[@]}" "$pg_bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
		-o "-p $p_pg -c listen_addresses=127.0.0.1 -c unix_socket_directories=$pgdir" start >/dev/null
	start redis redis-server --port "$p_redis" --bind 127.0.0.1 --save '' --appendonly no --dir "$pgdir"
	pg_url="postgres://handwire:$pg_password@127.0.0.1:$p_pg/postgres"
	start ta_sqlite "$bin/token-auth" --addr "127.0.0.1:$p_ta_sqlite" --db "$tmp/auth-c.db" --quiet
	start ta_a "$bin/token-auth" --addr "127.0.0.1:$p_ta_a" --db "$pg_url" \
		--redis "redis://127.0.0.1:$p_redis" --quiet
	wait_http_status() { # URL STATUS NAME
		for _ in $(seq 100); do
			[ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = "$2" ] && return 0
			sleep 0.1
		done
		echo "load.sh: $3 did not answer $1; its stderr:" >&2
		cat "$tmp/$3.err" >&2
		exit 1
	}
	# A first, alone: it applies the schema; then B.
	wait_http_status "$u:$p_ta_a/api/user/profile" 401 ta_a
	start ta_b "$bin/token-auth" --addr "127.0.0.1:$p_ta_b" --db "$pg_url" \
		--redis "redis://127.0.0.1:$p_redis" --quiet
	wait_http_status "$u:$p_ta_sqlite/api/user/profile" 401 ta_sqlite
	wait_http_status "$u:$p_ta_b/api/user/profile" 401 ta_b

	token_of() { # BASE USERNAME [SOURCE_IP]: register, print the access token
		curl -sf ${3:+--interface "$3"} -H 'content-type: application/json' \
			-d "{\"username\":\"$2\",\"password\":\"$password\"}" "$1/auth/register" |
			sed -E 's/.*"access_token":"([^"]+)".*/\1/'
	}
	t_sqlite=$(token_of "$u:$p_ta_sqlite" c-profile)
	t_shared=$(token_of "$u:$p_ta_a" c-profile)
	[ -n "$t_sqlite" ] && [ -n "$t_shared" ] || { echo "load.sh: cluster registration failed" >&2; exit 1; }
	# The token from A must be accepted by B: one check before measuring.
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t_shared" \
		"$u:$p_ta_b/api/user/profile")" = 200 ] || { echo "load.sh: B refused A's token" >&2; exit 1; }

	# -- profile ------------------------------------------------------------
	echo "  GET /api/user/profile with a valid token"
	for f in sqlite one two; do : >"$tmp/cp.$f"; done
	profile_on() { wrk_run "$tmp/out.$2" "$u:$1/api/user/profile" -c"$3" -H "Authorization: Bearer $4"; }
	for r in $(seq "$rounds"); do
		order="sqlite one two"
		[ $((r % 2)) = 0 ] && order="two one sqlite"
		for f in $order; do
			case $f in
			sqlite) m=$(profile_on "$p_ta_sqlite" s 50 "$t_sqlite") ;;
			one) m=$(profile_on "$p_ta_a" a 50 "$t_shared") ;;
			two)
				profile_on "$p_ta_a" a 25 "$t_shared" >"$tmp/two.a" &
				wa=$!
				profile_on "$p_ta_b" b 25 "$t_shared" >"$tmp/two.b"
				wait "$wa"
				m=$(cat "$tmp/two.a" "$tmp/two.b" | awk '{s += $1; if ($2 > p) p = $2} END {printf "%.2f %.2f", s, p}')
				;;
			esac
			echo "$m" >>"$tmp/cp.$f"
			printf '  round %d  %-26s %10.0f req/s   p99 %7.2f ms\n' "$r" "$f" $m
		done
	done
	row() { # TITLE FILE_A NAME_B FILE_B
		printf '%s|%s|%s|%s|%s|%s|%s|%s\n' "$1" \
			"$(awk '{print $1}' "$2" | median)" "$3" "$(awk '{print $1}' "$4" | median)" \
			"$(awk '{print $2}' "$2" | median)" "$(awk '{print $2}' "$4" | median)" \
			"$(awk '{print $1}' "$2" | spread)" "$(awk '{print $1}' "$4" | spread)" >>"$results"
	}
	row "token-auth profile: 1 instance on PostgreSQL+Redis" "$tmp/cp.one" "1 instance on SQLite" "$tmp/cp.sqlite"
	row "token-auth profile: 2 instances on PostgreSQL+Redis (summed)" "$tmp/cp.two" "1 instance on SQLite" "$tmp/cp.sqlite"

	# -- the limiter alone: every login past the limit is a 429 ----------------
	echo "  POST /login past the limit (all 429: the limiter check, memory vs Redis)"
	cat >"$tmp/login.lua" <<-'LUA'
		wrk.method = "POST"
		wrk.headers["Content-Type"] = "application/json"
		wrk.body = '{"username":"c-limited","password":"not-the-password"}'
	LUA
	for f in sqlite redis; do : >"$tmp/cl.$f"; done
	for r in $(seq "$rounds"); do
		order="sqlite redis"
		[ $((r % 2)) = 0 ] && order="redis sqlite"
		for f in $order; do
			port=$p_ta_sqlite
			[ "$f" = redis ] && port=$p_ta_a
			m=$(wrk_run "$tmp/out.l" "$u:$port/login" -c50 -s "$tmp/login.lua" 2>/dev/null)
			echo "$m" >>"$tmp/cl.$f"
			printf '  round %d  %-26s %10.0f req/s   p99 %7.2f ms\n' "$r" "limiter in $f" $m
		done
	done
	row "token-auth login refused by the limiter: Redis" "$tmp/cl.redis" "memory" "$tmp/cl.sqlite"

	# -- successful logins: bcrypt cost 12 dominates ---------------------------
	echo "  successful logins (bcrypt cost 12), 5 in a row per round, each from its own address"
	for f in sqlite redis; do : >"$tmp/cs.$f"; done
	for r in $(seq "$rounds"); do
		for f in sqlite redis; do
			port=$p_ta_sqlite
			[ "$f" = redis ] && port=$p_ta_a
			for n in 1 2 3 4 5; do
				ip=127.1$([ "$f" = redis ] && echo 1 || echo 0).$r.$n
				token_of "$u:$port" "c-$f-$r-$n" "$ip" >/dev/null
				"${pin_load[@]}" curl -s -o /dev/null --interface "$ip" -w '%{time_total}\n' \
					-H 'content-type: application/json' \
					-d "{\"username\":\"c-$f-$r-$n\",\"password\":\"$password\"}" \
					"$u:$port/login" >>"$tmp/cs.$f"
			done
		done
	done
	login_ms() { awk '{s += $1} END {printf "%.1f", s / NR * 1000}' "$1"; }
	cs_sqlite=$(login_ms "$tmp/cs.sqlite")
	cs_redis=$(login_ms "$tmp/cs.redis")
	echo "  mean successful login: SQLite + memory $cs_sqlite ms, PostgreSQL + Redis $cs_redis ms"
	cluster_logins="| token-auth successful login (bcrypt 12), mean of $((5 * rounds)) | $cs_redis ms | SQLite + memory | $cs_sqlite ms | $(awk -v a="$cs_redis" -v b="$cs_sqlite" 'BEGIN {printf "%.2f", a / b}') (time) | | | | | | |"
fi
