-- A contract step for the tests: what a later release would remove one release after it stopped
-- using it. Harmless here.
DROP FUNCTION IF EXISTS ${relay_schema}.probe_never_created();
