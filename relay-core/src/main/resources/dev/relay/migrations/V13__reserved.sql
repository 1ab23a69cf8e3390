-- Relay schema, version 13: a placeholder on the tracing branch only.
--
-- Version 13 is assigned to another change that is merged separately; this file only lets the
-- branch's version 14 apply without a gap. Drop it when the real version 13 is merged.
SELECT 1;
