-- Relay schema, version 19: producers granted for an older release keep enqueuing.
--
-- ${relay_schema} is replaced by the validated schema name; see V1__core.sql.
--
-- Since version 14 the enqueue statement names trace_context on every insert (NULL when no trace is
-- current). A role granted INSERT on a column list written before version 14 lacks it, so after an
-- upgrade its enqueue fails with "permission denied" even when nobody traces. Which roles produce
-- work is not the migration's to guess in general (docs/operations.md, rolling upgrades), but here
-- it can tell exactly: a role allowed to insert work_id inserts work, and trace_context is the
-- statement's own bookkeeping beside it. So every role holding INSERT on outbox.work_id as a
-- column grant (a table-wide INSERT covers the column already) gets INSERT on trace_context too.
-- Expand only: it adds privileges and changes no data.
DO $$
DECLARE
    grantee_name text;
BEGIN
    FOR grantee_name IN
        SELECT DISTINCT CASE WHEN acl.grantee = 0 THEN 'PUBLIC'
                             ELSE quote_ident(r.rolname) END
          FROM pg_attribute a
         CROSS JOIN LATERAL aclexplode(a.attacl) AS acl
          LEFT JOIN pg_roles r ON r.oid = acl.grantee
         WHERE a.attrelid = '${relay_schema}.outbox'::regclass
           AND a.attname = 'work_id'
           AND acl.privilege_type = 'INSERT'
    LOOP
        EXECUTE 'GRANT INSERT (trace_context) ON ${relay_schema}.outbox TO ' || grantee_name;
    END LOOP;
END
$$;
