-- Relay schema, version 10: work that waits for other work (dependencies).
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
-- Version 9 (console summaries) is added by another change; the migrator applies versions in
-- list order, so this file does not depend on it.

-- One row per (dependent, dependency). The dependent's row owns its dependencies (deleted with
-- it); the dependency is a work ID that existed as a row or a tombstone at enqueue, and is not a
-- foreign key: it may be purged to a tombstone later, whose final state still counts.
CREATE TABLE ${relay_schema}.dependency (
    work_id    text NOT NULL REFERENCES ${relay_schema}.outbox (work_id) ON DELETE CASCADE,
    depends_on text NOT NULL,
    PRIMARY KEY (work_id, depends_on)
);

-- Dependents of one work item: for "what does this block" and for operators.
CREATE INDEX dependency_depends_on_idx ON ${relay_schema}.dependency (depends_on);

-- Whether the row has dependency rows, set at enqueue and never changed: the claim evaluates
-- its dependency subquery only for such rows, so other work pays one boolean test. A constant
-- default rewrites nothing.
ALTER TABLE ${relay_schema}.outbox ADD COLUMN has_dependencies boolean NOT NULL DEFAULT false;
