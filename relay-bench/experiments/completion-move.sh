#!/usr/bin/env bash
# Design experiment for issue 26 (docs/operations.md, section 17): completion as today's UPDATE to
# 'done' against the designed move, DELETE ... RETURNING from the work table plus INSERT into a
# history table partitioned by completion day, both in batches of 100 rows per transaction with
# two pgbench clients, on ROWS running rows of a real Relay schema. Prints transactions per second
# and WAL per row for each, three rounds alternating. Not the bench module: the statements are
# simplified (no guard CTE, no attempt rows), so compare the two, not with Relay's figures.
# Needs psql and pgbench on the PATH and a server on 127.0.0.1:5432 with trust auth; set up once:
#   createdb -h 127.0.0.1 -U postgres hist_exp
#   ./relay migrate --jdbc-url 'jdbc:postgresql://127.0.0.1:5432/hist_exp?user=postgres' --schema exp
#   psql -h 127.0.0.1 -U postgres hist_exp -c "CREATE TABLE exp.work_history (LIKE exp.outbox
#     INCLUDING DEFAULTS) PARTITION BY RANGE (completed_at)" -c "CREATE TABLE exp.work_history_d0
#     PARTITION OF exp.work_history FOR VALUES FROM (date_trunc('day', now()) - interval '1 day')
#     TO (date_trunc('day', now()) + interval '2 day')" -c "CREATE INDEX ON exp.work_history (work_id)"
set -euo pipefail
P="psql -X -q -h 127.0.0.1 -U postgres -d hist_exp -v ON_ERROR_STOP=1"
ROWS=${ROWS:-1500000}
fill() {
  $P <<SQL
SET session_replication_role = replica;
TRUNCATE exp.outbox CASCADE;
TRUNCATE exp.work_history;
DROP SEQUENCE IF EXISTS exp.blk; CREATE SEQUENCE exp.blk;
INSERT INTO exp.outbox (work_id, kind, payload, state, claim_generation, attempts, created_at,
  available_at, claimed_at, first_attempt_at, claimed_by, lease_until)
SELECT 'r-' || g, 'bench.noop', jsonb_build_object('n', g, 'order', 'o-' || g), 'running', 1, 1,
  now(), now(), now(), now(), 'w', now() + interval '1 hour'
FROM generate_series(1, $ROWS) g;
RESET session_replication_role;
VACUUM ANALYZE exp.outbox; VACUUM ANALYZE exp.work_history;
CHECKPOINT;
SQL
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ids="work_id = ANY (ARRAY(SELECT 'r-' || g FROM generate_series(:b * 100 + 1, :b * 100 + 100) g)) AND claim_generation = 1 AND state = 'running'"
cat > $work/update.sql <<SQL
SELECT nextval('exp.blk') - 1 AS b \gset
UPDATE exp.outbox SET state = 'done', claimed_by = NULL, lease_until = NULL, completed_at = clock_timestamp(), outcome = 'delivered' WHERE $ids;
SQL
cols=$($P -At -c "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_schema='exp' AND table_name='outbox' AND is_generated = 'NEVER'")
sel=$($P -At -c "SELECT string_agg(CASE column_name WHEN 'state' THEN '''done''' WHEN 'claimed_by' THEN 'NULL' WHEN 'lease_until' THEN 'NULL' WHEN 'completed_at' THEN 'clock_timestamp()' WHEN 'outcome' THEN '''delivered''' ELSE 'm.' || quote_ident(column_name) END, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_schema='exp' AND table_name='outbox' AND is_generated = 'NEVER'")
cat > $work/move.sql <<SQL
SELECT nextval('exp.blk') - 1 AS b \gset
WITH m AS (DELETE FROM exp.outbox WHERE $ids RETURNING *) INSERT INTO exp.work_history ($cols) SELECT $sel FROM m;
SQL
for round in 1 2 3; do
  for v in update move; do
    fill
    lsn0=$($P -At -c "SELECT pg_current_wal_lsn()")
    out=$(pgbench -n -h 127.0.0.1 -U postgres -c 2 -j 2 -t "$((ROWS / 100 * 9 / 10 / 2))" -f $work/$v.sql hist_exp 2>&1)
    lsn1=$($P -At -c "SELECT pg_current_wal_lsn()")
    tps=$(grep -o 'tps = [0-9.]*' <<<"$out" | head -1 | grep -o '[0-9.]*')
    tx=$(grep -o 'number of transactions actually processed: [0-9]*' <<<"$out" | grep -o '[0-9]*$')
    wal=$($P -At -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")
    left=$($P -At -c "SELECT count(*) FROM exp.outbox WHERE state = 'running'")
    echo "round $round $v: $tps tx/s (100 rows each), $tx tx, WAL $((wal / tx / 100)) bytes/row, running left $left, load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
