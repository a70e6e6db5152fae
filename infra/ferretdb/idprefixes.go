package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/bson"
)

// Records appended about a document can carry its `_id` at the head of their own (a webhook
// delivery's log entry is `<delivery id>:<seq>`), so the `_id` btree FerretDB keeps finds a
// document's records without an index on a link field, whose two index entries (its btree and
// GIN twin, equalityindexes.go) every record would otherwise write. FerretDB pushes no range
// down, so the gate answers this one by SQL:
//
//	{ idsByPrefix: <collection>, prefixes: [<string>, …], separator: <one character>, $db: <database> }
//	→ { ids: [<_id>, …], ok: 1 }
//
// The ids that begin with a prefix and the separator (at most 10,000 per prefix, at most 1,000
// prefixes), grouped by prefix in the order given and in id order within one; the caller reads
// the documents by `_id`. The
// range is [prefix + separator, prefix + the next character) in the store's C collation, so
// the separator must be a character no prefix holds. `pageIdsByLatest` takes the same link
// (`latest.separator`).

const idsByPrefixCommand = "idsByPrefix"

const (
	maxPrefixes      = 1000
	maxIDsPerPrefix  = 10000
	firstSeparator   = '!'
	lastSeparator    = '}'
	separatorMessage = "separator must be one character from ! to }"
)

type prefixRequest struct {
	db, collection string
	prefixes       []string
	separator      string
}

type prefixResult struct {
	IDs []string `bson:"ids"`
	OK  float64  `bson:"ok"`
}

// parseSeparator is a separator and the character after it, which bounds its range.
func parseSeparator(s string, ok bool) (string, string, error) {
	if !ok || len(s) != 1 || s[0] < firstSeparator || s[0] > lastSeparator {
		return "", "", bad("%s", separatorMessage)
	}
	return s, string(s[0] + 1), nil
}

func parsePrefixRequest(body bson.Raw) (prefixRequest, error) {
	var r prefixRequest
	var err error
	if r.db, r.collection, err = commandTarget(body, idsByPrefixCommand); err != nil {
		return r, err
	}
	separator, isString := body.Lookup("separator").StringValueOK()
	if r.separator, _, err = parseSeparator(separator, isString); err != nil {
		return r, bad("idsByPrefix: %v", err)
	}
	prefixes, ok := body.Lookup("prefixes").ArrayOK()
	if !ok {
		return r, bad("idsByPrefix: prefixes must be an array of strings")
	}
	values, err := prefixes.Values()
	if err != nil || len(values) > maxPrefixes {
		return r, bad("idsByPrefix: prefixes must be at most %d strings", maxPrefixes)
	}
	for _, v := range values {
		s, ok := v.StringValueOK()
		if !ok || s == "" {
			return r, bad("idsByPrefix: every prefix must be a non-empty string")
		}
		r.prefixes = append(r.prefixes, s)
	}
	return r, nil
}

func (p *ownCommands) idsByPrefix(ctx context.Context, r prefixRequest) (prefixResult, error) {
	result := prefixResult{IDs: []string{}, OK: 1}
	tables, err := p.tablesOf(ctx, r.db, r.collection)
	table, found := tables[r.collection]
	if err != nil || !found || len(r.prefixes) == 0 {
		return result, err
	}
	_, next, _ := parseSeparator(r.separator, true)
	rows, err := p.pool.Query(ctx, fmt.Sprintf(
		`SELECT e.id FROM unnest($1::text[]) WITH ORDINALITY AS p(prefix, n)
		 CROSS JOIN LATERAL (SELECT _jsonb->>'_id' AS id FROM %s WHERE %s >= to_jsonb(p.prefix || $2::text)
		   AND %s < to_jsonb(p.prefix || $3::text) ORDER BY %s LIMIT %d) AS e ORDER BY p.n, e.id`,
		pgx.Identifier{r.db, table}.Sanitize(), field("_id"), field("_id"), field("_id"), maxIDsPerPrefix),
		r.prefixes, r.separator, next)
	if err != nil {
		return result, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return result, err
		}
		result.IDs = append(result.IDs, id)
	}
	return result, rows.Err()
}
