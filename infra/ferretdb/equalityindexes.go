package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FerretDB 1.24's PostgreSQL backend pushes an equality on a top-level field down as
// `_jsonb->'field' @> value`, but the indexes it creates are btrees on `(_jsonb->'field')`, and a
// btree serves `=`, not `@>`. So every read, update or delete by `_id` — and every lookup by any
// other indexed field — would be a sequential scan of the whole collection, whose cost grows with
// the collection and sits behind every update of a signal, every stats projection update and
// every webhook delivery update.
//
// These fix it without touching FerretDB:
//
//   - Every single-field btree index FerretDB creates on a top-level field (`_id_` included)
//     gets a GIN twin (jsonb_path_ops) on the same expression, which serves `@>`, so an `_id` lookup
//     is an index lookup in PostgreSQL. FerretDB never sees the twin (its own metadata lists its
//     indexes); dropping the index or the collection drops the twin with it. Compound indexes
//     get none: FerretDB pushes down only equalities, one field at a time.
//   - Custom plans only (plan_cache_mode). FerretDB sends every one-field equality as the same
//     prepared statement, `_jsonb->$1 @> $2`, whatever the field. PostgreSQL switches such a
//     statement to one generic plan once the custom ones cost as much on average — and a few
//     lookups on an unindexed field are enough — after which the key is unknown at planning
//     time and every `_id` lookup is a sequential scan again, twin index or not.
//   - No JIT and no parallel plans. Before PostgreSQL has statistics on a table (see
//     tablemaintenance.go) it guesses that an `@>` matches a fifth of the rows, and for such a guess
//     it plans a parallel scan and compiles it, which costs a one-row `_id` read far more than the
//     read itself. FerretDB's queries are small reads and writes; on the two cores
//     the whole system shares, neither ever pays off.
//
// installEqualityIndexes runs once, before FerretDB starts. Event triggers add the twins in the
// same transaction as FerretDB's CREATE INDEX (so no collection is ever without them) and drop
// them with their btree; existing indexes of a kept database get theirs here. Every statement
// is idempotent.
const equalityIndexesSQL = `
CREATE OR REPLACE FUNCTION public.ferretdb_embedded_twin(idx oid) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  ix record;
BEGIN
  SELECT c.relname AS name, i.indrelid::regclass AS tbl, pg_get_indexdef(idx, 1, false) AS expr
    INTO ix
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
    WHERE i.indexrelid = idx AND i.indnatts = 1 AND am.amname = 'btree';
  IF NOT FOUND OR ix.expr !~ '^\(+_jsonb -> ''[^'']*''::text\)+$' THEN
    RETURN;
  END IF;
  EXECUTE format(
    'CREATE INDEX IF NOT EXISTS %I ON %s USING gin (%s jsonb_path_ops) WITH (fastupdate = off)',
    left(ix.name, 59) || '_gin', ix.tbl, ix.expr
  );
END
$fn$;

CREATE OR REPLACE FUNCTION public.ferretdb_embedded_twin_created() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  created record;
BEGIN
  FOR created IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE object_type = 'index'
  LOOP
    PERFORM public.ferretdb_embedded_twin(created.objid);
  END LOOP;
END
$fn$;

CREATE OR REPLACE FUNCTION public.ferretdb_embedded_twin_dropped() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  dropped record;
BEGIN
  FOR dropped IN SELECT schema_name, object_name FROM pg_event_trigger_dropped_objects()
    WHERE object_type = 'index' AND object_name NOT LIKE '%\_gin' AND NOT is_temporary
  LOOP
    EXECUTE format('DROP INDEX IF EXISTS %I.%I', dropped.schema_name, left(dropped.object_name, 59) || '_gin');
  END LOOP;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS ferretdb_embedded_twin_created;
CREATE EVENT TRIGGER ferretdb_embedded_twin_created ON ddl_command_end
  WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION public.ferretdb_embedded_twin_created();
DROP EVENT TRIGGER IF EXISTS ferretdb_embedded_twin_dropped;
CREATE EVENT TRIGGER ferretdb_embedded_twin_dropped ON sql_drop
  WHEN TAG IN ('DROP INDEX') EXECUTE FUNCTION public.ferretdb_embedded_twin_dropped();

DO $do$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET plan_cache_mode = force_custom_plan', current_database());
  EXECUTE format('ALTER DATABASE %I SET jit = off', current_database());
  EXECUTE format('ALTER DATABASE %I SET max_parallel_workers_per_gather = 0', current_database());
END $do$;

SELECT public.ferretdb_embedded_twin(i.indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'public') AND n.nspname NOT LIKE 'pg_toast%';
`

func installEqualityIndexes(postgresURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, postgresURL)
	if err != nil {
		return fmt.Errorf("equality indexes: %w", err)
	}
	defer pool.Close()
	// Simple protocol: several statements in one round trip, no parameters.
	if _, err := pool.Exec(ctx, equalityIndexesSQL); err != nil {
		return fmt.Errorf("equality indexes: %w", err)
	}
	return nil
}
