-- Relay schema: the rollup behind the console's charts (throughput, failures by reason, p50/p95
-- creation-to-completion per queue and kind over 1 h, 24 h and 7 d).
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- Finished work counted per bucket of time, queue and kind. The maintenance leader folds work
-- that finished since its watermark into three tiers at once, each serving one chart window with
-- a bounded number of rows per (queue, kind): 1-minute buckets kept 3 hours (the 1 h chart, 60
-- points), 15-minute buckets kept 26 hours (the 24 h chart, 96 points), 1-hour buckets kept 8 days
-- and 2 hours (the 7 d chart, 168 points): at most 180 + 104 + 194 = 478 rows per (queue, kind)
-- that finished work. A page reads one tier's rows for its window, never the work table.
--
-- latency is a histogram of creation-to-completion times of done work: 128 counters on a fixed
-- log scale (bin 0: under 1 ms; bin b >= 1: [2^((b-1)/4), 2^(b/4)) ms; bin 127 also everything
-- above, about 35 days). Histograms of any buckets add up element by element, so p50 and p95 over
-- a window come from their sum; the middle of a bin is within 9.05 % of any value in it.
-- failures counts failed work by last_error_kind ('unknown' when none was recorded).
CREATE TABLE ${relay_schema}.rollup (
    span_s       integer     NOT NULL CHECK (span_s IN (60, 900, 3600)),
    bucket_start timestamptz NOT NULL,
    queue        text        NOT NULL,
    kind         text        NOT NULL,
    done         bigint      NOT NULL DEFAULT 0 CHECK (done >= 0),
    failed       bigint      NOT NULL DEFAULT 0 CHECK (failed >= 0),
    cancelled    bigint      NOT NULL DEFAULT 0 CHECK (cancelled >= 0),
    failures     jsonb       NOT NULL DEFAULT '{}',
    latency      integer[]   NOT NULL CHECK (cardinality(latency) = 128),
    PRIMARY KEY (span_s, bucket_start, queue, kind)
);
COMMENT ON TABLE ${relay_schema}.rollup IS
    'Relay charts: finished work per time bucket, queue and kind, folded by the maintenance leader';

-- One row: how far the fold has read. Work is read in (completed_at, work_id) order; position is
-- the last row folded, and everything that finished at or before folded_through is in the
-- rollup. Each fold locks this row, folds a bounded batch after the position and moves it in the
-- same transaction, so a crash or a second leader can neither lose a batch nor count one twice.
-- The first fold starts 8 days back, the oldest any chart shows.
CREATE TABLE ${relay_schema}.rollup_watermark (
    only_row          boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    last_completed_at timestamptz NOT NULL,
    last_work_id      text        NOT NULL,
    folded_through    timestamptz NOT NULL,
    folded            bigint      NOT NULL DEFAULT 0,
    folded_at         timestamptz
);
INSERT INTO ${relay_schema}.rollup_watermark (last_completed_at, last_work_id, folded_through)
VALUES (clock_timestamp() - interval '8 days', '', clock_timestamp() - interval '8 days');
