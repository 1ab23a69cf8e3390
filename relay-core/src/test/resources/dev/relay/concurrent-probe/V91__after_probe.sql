-- A transactional version after the concurrent build: applied in the same migration run.
CREATE TABLE ${relay_schema}.probe_after (id integer PRIMARY KEY);
