package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.mongodb.org/mongo-driver/bson"
)

// FerretDB 1.24 removes a range of ids by reading and decoding every document of the collection
// (no range is pushed down), and a delete by ids one statement and transaction per id: ~1,600
// documents a second on a slow machine, as much store time as writing them took. Records kept
// for a retention (the webhooks deliveries, whose ids begin with their time) are removed by a
// range of ids, so the gate answers that one command by SQL over the `_id` btree FerretDB keeps:
//
//	{ removeIdRange: <collection>, from: <string>, below: <string>, limit: <n>, $db: <database> }
//	→ { removed: <n>, ok: 1 }
//
// It removes at most `limit` documents whose string `_id` is at or above `from` and below
// `below`, in one statement; a caller repeats it until fewer than `limit` go. Documents are only
// removed, never read or changed, and nothing of FerretDB's own (its metadata, its indexes,
// which PostgreSQL keeps) is touched.

const removeIDRangeCommand = "removeIdRange"

type removeRequest struct {
	db, collection string
	from, below    string
	limit          int64
}

type removeResult struct {
	Removed int64   `bson:"removed"`
	OK      float64 `bson:"ok"`
}

func parseRemoveRequest(body bson.Raw) (removeRequest, error) {
	var r removeRequest
	var err error
	if r.db, r.collection, err = commandTarget(body, removeIDRangeCommand); err != nil {
		return r, err
	}
	var ok bool
	if r.from, ok = body.Lookup("from").StringValueOK(); !ok || r.from == "" {
		return r, bad("removeIdRange: from must be a non-empty string")
	}
	if r.below, ok = body.Lookup("below").StringValueOK(); !ok || r.below <= r.from {
		return r, bad("removeIdRange: below must be a string above from")
	}
	if r.limit, ok = body.Lookup("limit").AsInt64OK(); !ok || r.limit < 1 || r.limit > 10000 {
		return r, bad("removeIdRange: limit must be a whole number from 1 to 10000")
	}
	return r, nil
}

func (p *ownCommands) removeRange(ctx context.Context, r removeRequest) (removeResult, error) {
	result := removeResult{OK: 1}
	tables, err := p.tablesOf(ctx, r.db, r.collection)
	table, found := tables[r.collection]
	if err != nil || !found {
		return result, err
	}
	t := pgx.Identifier{r.db, table}.Sanitize()
	tag, err := p.pool.Exec(ctx, fmt.Sprintf(
		`DELETE FROM %[1]s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %[1]s WHERE %[2]s >= $1::jsonb AND %[2]s < $2::jsonb LIMIT $3))`,
		t, field("_id")), jsonString(r.from), jsonString(r.below), r.limit)
	if err != nil {
		return result, err
	}
	result.Removed = tag.RowsAffected()
	return result, nil
}

// tablesOf is the PostgreSQL table of each of the collections that exists, by one read of
// FerretDB's metadata; a collection or database that does not exist has none.
func (p *ownCommands) tablesOf(ctx context.Context, db string, collections ...string) (map[string]string, error) {
	tables := map[string]string{}
	rows, err := p.pool.Query(ctx,
		`SELECT _jsonb->>'_id', _jsonb->>'table' FROM `+pgx.Identifier{db, "_ferretdb_database_metadata"}.Sanitize()+
			` WHERE _jsonb->>'_id' = ANY($1::text[])`, collections)
	if err == nil {
		for rows.Next() {
			var collection, table string
			if err = rows.Scan(&collection, &table); err != nil {
				break
			}
			tables[collection] = table
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
		return map[string]string{}, nil
	}
	return tables, err
}
