#!/usr/bin/env bash
# Launch-to-ready time of `relay serve`: from starting the JVM to the first HTTP 200 of
# /actuator/health, RUNS times, printing each run and the median (milliseconds).
#
#   relay-serve/bench/startup.sh                 # the jar the ./relay script runs
#   JAR=/path/to/other-all.jar RUNS=9 relay-serve/bench/startup.sh
#   JAR=relay-serve/target/cds/app/relay-serve-0.1.0-SNAPSHOT-all.jar \
#     JAVA_OPTS="-XX:SharedArchiveFile=relay-serve/target/cds/relay-serve.jsa" \
#     CONFIG=serve.yml relay-serve/bench/startup.sh      # as ./relay serve starts it
#
# CONFIG (a file with no port and no database: the script gives both) defaults to a JSON config,
# which every release reads; ./relay serve prepares relay-serve/target/cds on first use.
#
# The database: $RELAY_JDBC_URL, else a throwaway PostgreSQL cluster (initdb/pg_ctl on the PATH,
# run as the postgres user when this runs as root) on port $PG_PORT, removed afterwards. Work is
# not timed: the config serves one `log` kind with a console user, as a sidecar would.
# Not a test: the figure depends on the machine and its load (docs/operations.md lists ours).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
jar="${JAR:-$here/relay-serve/target/relay-serve-0.1.0-SNAPSHOT-all.jar}"
runs="${RUNS:-5}"
port="${PORT:-19464}"
pg_port="${PG_PORT:-55433}"
config="${CONFIG:-}"
work="$(mktemp -d /tmp/relay-serve-startup.XXXXXX)"
chmod 755 "$work"
pg=""

cleanup() {
  if [ -n "$pg" ]; then
    as_pg pg_ctl -D "$pg" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

url="${RELAY_JDBC_URL:-}"
if [ -z "$url" ]; then
  pg="$work/pg"
  mkdir -p "$pg"
  if [ "$(id -u)" = 0 ]; then chown postgres "$pg" "$work"; fi
  as_pg initdb -D "$pg" -U relay --auth=trust >/dev/null
  as_pg pg_ctl -D "$pg" -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1" -w start >/dev/null
  url="jdbc:postgresql://127.0.0.1:$pg_port/postgres?user=relay"
fi

if [ -z "$config" ]; then
  config="$work/relay.json"
  # bcrypt of "startup" (cost 4): the console is mounted, as in production.
  cat >"$config" <<'JSON'
{"kinds": {"tick": {"handler": "log"}},
 "console": {"users": [{"name": "ops", "hash": "$2a$04$3O1W3W9b6jF8Fq5r6mYyUOlb2Gm0C5i3x5fZJr1k4Y0Dq0bq6xQ7y", "role": "operator"}]}}
JSON
fi

times=()
for i in $(seq 1 "$runs"); do
  log="$work/serve-$i.log"
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  java ${JAVA_OPTS:-} -jar "$jar" serve --config "$config" --jdbc-url "$url" --migrate \
    --port "$port" >"$log" 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/actuator/health"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "relay serve exited early:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.02
  done
  end=$(date +%s%N)
  ms=$(((end - start) / 1000000))
  # CPU the process used until then (user + system): what the load of other processes changes less.
  read -r -a stat <"/proc/$pid/stat"
  cpu=$(((stat[13] + stat[14]) * 1000 / $(getconf CLK_TCK)))
  spring=$(grep -o 'Started [A-Za-z]* in [0-9.]* seconds' "$log" | grep -o '[0-9.]* seconds' || true)
  echo "run $i: ${ms} ms to the first 200 of /actuator/health, ${cpu} ms of CPU (Spring: ${spring:-n/a})"
  times+=("$ms")
  kill -TERM "$pid"
  wait "$pid" || true
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}')
echo "median of $runs runs: ${median} ms (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
