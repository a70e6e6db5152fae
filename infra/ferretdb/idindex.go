package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FerretDB 1.24's PostgreSQL backend pushes an `_id` equality down as `_jsonb->'_id' @> value`,
// but the `_id_` index it creates is a btree on `(_jsonb->'_id')`, and a btree serves `=`, not
// `@>`. So every read, update or delete by `_id` is a sequential scan of the whole collection
// (found here: 158 ms at 300,000 documents, seconds at 1,000,000, on both cores at once, behind
// every update of a signal, every stats projection update and every webhook delivery update).
//
// A GIN index (jsonb_path_ops) on the same expression serves `@>`: the same lookup takes 0.1 ms
// and the plan stays on the index with FerretDB's parameterised queries. FerretDB never sees it
// (its own metadata lists its indexes), and dropping a collection drops the table with it.
//
// installIDIndexes puts that index on every FerretDB table that exists, and installs an event
// trigger that adds it to every table created afterwards, in the same transaction as FerretDB's
// CREATE TABLE, so a new collection is never without it. It runs once, before FerretDB starts;
// every statement is idempotent, so a kept database is brought up to date on the next start.
const idIndexSQL = `
CREATE OR REPLACE FUNCTION public.ferretdb_embedded_index_id(tbl regclass) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  rel pg_class%ROWTYPE;
BEGIN
  SELECT * INTO rel FROM pg_class WHERE oid = tbl;
  IF rel.relkind <> 'r' OR NOT EXISTS (
    SELECT 1 FROM pg_attribute WHERE attrelid = tbl AND attname = '_jsonb' AND NOT attisdropped
  ) THEN
    RETURN;
  END IF;
  EXECUTE format(
    'CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((_jsonb->''_id'') jsonb_path_ops) WITH (fastupdate = off)',
    left(rel.relname, 48) || '_id_gin', tbl
  );
END
$fn$;

CREATE OR REPLACE FUNCTION public.ferretdb_embedded_index_new_table() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  created record;
BEGIN
  FOR created IN SELECT objid FROM pg_event_trigger_ddl_commands()
    WHERE command_tag = 'CREATE TABLE' AND object_type = 'table'
  LOOP
    PERFORM public.ferretdb_embedded_index_id(created.objid::regclass);
  END LOOP;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS ferretdb_embedded_index_new_table;
CREATE EVENT TRIGGER ferretdb_embedded_index_new_table ON ddl_command_end
  WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION public.ferretdb_embedded_index_new_table();

SELECT public.ferretdb_embedded_index_id(c.oid)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'public')
    AND n.nspname NOT LIKE 'pg_toast%';
`

func installIDIndexes(postgresURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, postgresURL)
	if err != nil {
		return fmt.Errorf("id indexes: %w", err)
	}
	defer pool.Close()
	// Simple protocol: several statements in one round trip, no parameters.
	if _, err := pool.Exec(ctx, idIndexSQL); err != nil {
		return fmt.Errorf("id indexes: %w", err)
	}
	return nil
}
