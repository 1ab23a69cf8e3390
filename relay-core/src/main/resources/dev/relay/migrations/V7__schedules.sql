-- Relay schema, version 7: the state of recurring schedules (module relay-schedule).
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.

-- One row per schedule name. A scheduler locks the row (SELECT ... FOR UPDATE SKIP LOCKED), reads
-- the database clock, enqueues the slots due since last_slot, and moves last_slot forward in the
-- same transaction: so however many processes run the schedule, each slot is decided once, and a
-- missed-slot policy is applied once. The slot's work ID (<name>@<slot>) backs this up: a second
-- enqueue of one slot is recognised as the same work.
CREATE TABLE ${relay_schema}.schedule_state (
    name        text        PRIMARY KEY
                            CHECK (name ~ '^[A-Za-z0-9._:-]{1,100}$'),
    kind        text        NOT NULL,
    -- The canonical definition (timing and missed-slot policy); a process registering the same
    -- name with another definition is refused.
    definition  text        NOT NULL,
    -- The latest slot decided (enqueued or dropped by the missed-slot policy); NULL until the
    -- first decision, when slots count from created_at.
    last_slot   timestamptz,
    -- The first slot after the latest decision, for operators (relay schedules).
    next_slot   timestamptz,
    decided_at  timestamptz,
    decided_by  text,
    enqueued    bigint      NOT NULL DEFAULT 0 CHECK (enqueued >= 0),
    skipped     bigint      NOT NULL DEFAULT 0 CHECK (skipped >= 0),
    -- Slots whose work ID was already taken (an equal item: counted, not fatal).
    conflicts   bigint      NOT NULL DEFAULT 0 CHECK (conflicts >= 0),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
