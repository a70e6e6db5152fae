package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// FerretDB 1.24 pushes down equalities only: a sorted, skipped page of a collection, and the
// count of a filter, read and decode every matching document in Go. A page of one webhook
// subscription's deliveries cost its whole history (1.5–1.9 s at 10,000 deliveries, linear;
// docs/benchmarks.md, "A page of a subscription's deliveries costs its whole history").
//
// PostgreSQL itself can serve that page from the btree FerretDB already keeps for a compound
// index (`(_jsonb->'webhook_id', _jsonb->'created_at' DESC)`): FerretDB's PostgreSQL backend
// keeps each collection as a table of `_jsonb` documents, strings as JSON strings and dates as
// milliseconds, which order as MongoDB orders them. So the gate answers a command of its own,
// `pageIds`, by SQL: the ids of a page and the filter's count, never the documents (FerretDB's
// decoders are internal to its module), which the client then reads by `_id`, an equality
// FerretDB pushes down. Clients ask once at start-up whether the store answers it; MongoDB and
// a FerretDB without this wrapper answer "no such command", and the client pages as before.
//
//	{ pageIds: <collection>, equal: { <field>: <value>, … }, sort: { <field>: ±1, … },
//	  after: { <sort field>: <value>, … }?, skip: <n>?, limit: <n>, $db: <database> }
//	→ { ids: [<_id>, …], total: <count of equal>, ok: 1 }
//
// `after` is a keyset: the page starts after that row in the sort's order (every sort field
// named, one direction for all). Values are strings, dates, numbers and booleans; fields are
// top-level names.
//
// A document's state may be the last of the records appended about it (a delivery's status is
// its log's last entry's), which no filter of FerretDB's reaches without reading every document
// and every record. `pageIdsByLatest` is the same page, of the documents whose latest record
// says so:
//
//	{ pageIdsByLatest: <collection>, …pageIds' fields…,
//	  latest: { from: <collection>, link: <field>, order: <field>, field: <field>,
//	            equals: <value>, fallback: <field> } }
//	→ { ids: […], total: <count of the page's filter>, examined: <count of equal>, ok: 1 }
//
// (`link` or `separator`: with a separator, a record is the document's when its `_id` is the
// document's, the separator and more, found by a range of `from`'s `_id` btree; idprefixes.go.)
// A document's latest record is the one of `from` whose `link` equals the document's `_id` with
// the highest `order`; the document matches when that record's `field` equals `equals`, or, with
// no record, when its own `fallback` field does. PostgreSQL finds each latest record by the btree
// of `from`'s index on `link`: a page costs what it walks, and the count what the subscription
// holds, at index cost. A wrapper without it answers "no such command", so a client never takes an
// unfiltered page for a filtered one.

const pageIdsCommand = "pageIds"
const pageIdsByLatestCommand = "pageIdsByLatest"

var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type pageRequest struct {
	db, collection string
	equal          []fieldValue
	sort           []string
	descending     bool
	after          []string
	skip, limit    int64
	latest         *latestFilter
}

// latestFilter is pageIdsByLatest's `latest`.
type latestFilter struct {
	from, link, order, field, fallback string
	equals                             string
	// separator, when given, links a record to the document whose `_id` and it begin the record's
	// `_id` (idprefixes.go), and `link` is not read.
	separator string
}

type fieldValue struct {
	field string
	json  string
}

type pageResult struct {
	IDs   []string `bson:"ids"`
	Total int64    `bson:"total"`
	// What the filter read: the documents equal to `equal` (pageIdsByLatest only).
	Examined *int64  `bson:"examined,omitempty"`
	OK       float64 `bson:"ok"`
}

type commandError struct {
	OK       float64 `bson:"ok"`
	ErrMsg   string  `bson:"errmsg"`
	Code     int32   `bson:"code"`
	CodeName string  `bson:"codeName"`
}

// ownCommands answers the wrapper's own commands (pageIds here, removeIdRange in idranges.go) by
// SQL over its own few connections to FerretDB's PostgreSQL.
type ownCommands struct {
	pool *pgxpool.Pool
}

func newOwnCommands(ctx context.Context, postgresURL string) (*ownCommands, error) {
	config, err := pgxpool.ParseConfig(postgresURL)
	if err != nil {
		return nil, fmt.Errorf("own commands: %w", err)
	}
	// Short statements (a page, a batch removed): a few connections serve them; PostgreSQL's 100
	// are shared machine-wide.
	config.MaxConns = 4
	config.MaxConnIdleTime = time.Minute
	pool, err := pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("own commands: %w", err)
	}
	return &ownCommands{pool: pool}, nil
}

// isOwnCommand says whether a command is this wrapper's own (pageIds, pageIdsByLatest,
// removeIdRange).
func isOwnCommand(command opMsgCommand) bool {
	first, err := command.body.IndexErr(0)
	if err != nil {
		return false
	}
	switch first.Key() {
	case pageIdsCommand, pageIdsByLatestCommand, removeIDRangeCommand, idsByPrefixCommand:
		return true
	}
	return false
}

// maxCommandTime bounds every own command, and `maxTimeMS` bounds one further, as MongoDB's
// commands take it: a statement whose caller stopped waiting does not go on holding PostgreSQL.
const maxCommandTime = 30 * time.Second

// commandTimeLimit is a command's time limit: its `maxTimeMS`, or the wrapper's bound when it gives
// none, 0 (MongoDB's "no limit") or more.
func commandTimeLimit(body bson.Raw) (time.Duration, error) {
	v, err := body.LookupErr("maxTimeMS")
	if err != nil {
		return maxCommandTime, nil
	}
	ms, ok := v.AsInt64OK()
	if !ok || ms < 0 {
		return 0, bad("maxTimeMS must be a whole number ≥ 0")
	}
	if ms == 0 || ms > maxCommandTime.Milliseconds() {
		return maxCommandTime, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// answer runs one of the wrapper's own commands and returns the whole OP_MSG reply to `req`. A
// command past its time limit is MongoDB's MaxTimeMSExpired (50), which clients tell from a fault.
func (p *ownCommands) answer(ctx context.Context, req []byte, command opMsgCommand) []byte {
	var doc interface{}
	limit, err := commandTimeLimit(command.body)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err == nil {
		doc, err = p.run(ctx, command)
	}
	if err != nil {
		var bad badValue
		if errors.As(err, &bad) {
			doc = commandError{ErrMsg: err.Error(), Code: 2, CodeName: "BadValue"}
		} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			doc = commandError{
				ErrMsg:   fmt.Sprintf("operation exceeded time limit (%d ms)", limit.Milliseconds()),
				Code:     50,
				CodeName: "MaxTimeMSExpired",
			}
		} else {
			doc = commandError{ErrMsg: err.Error(), Code: 1, CodeName: "InternalError"}
		}
	}
	return opMsgReply(req, doc)
}

// run parses and runs one own command: its result document.
func (p *ownCommands) run(ctx context.Context, command opMsgCommand) (interface{}, error) {
	first, _ := command.body.IndexErr(0)
	switch first.Key() {
	case removeIDRangeCommand:
		r, err := parseRemoveRequest(command.body)
		if err != nil {
			return nil, err
		}
		return p.removeRange(ctx, r)
	case idsByPrefixCommand:
		r, err := parsePrefixRequest(command.body)
		if err != nil {
			return nil, err
		}
		return p.idsByPrefix(ctx, r)
	}
	r, err := parsePageRequest(command.body, first.Key())
	if err != nil {
		return nil, err
	}
	return p.page(ctx, r)
}

type badValue struct{ msg string }

func (b badValue) Error() string { return b.msg }

func bad(format string, args ...interface{}) error { return badValue{fmt.Sprintf(format, args...)} }

// commandTarget is an own command's collection (the value of its first field, `name`) and database.
func commandTarget(body bson.Raw, name string) (db, collection string, err error) {
	collection, ok := body.Lookup(name).StringValueOK()
	if !ok || collection == "" {
		return "", "", bad("%s: the collection must be a string", name)
	}
	if db, ok = body.Lookup("$db").StringValueOK(); !ok {
		return "", "", bad("%s: $db is missing", name)
	}
	return db, collection, nil
}

func parsePageRequest(body bson.Raw, name string) (pageRequest, error) {
	var r pageRequest
	var err error
	if r.db, r.collection, err = commandTarget(body, name); err != nil {
		return r, err
	}
	equal, ok := body.Lookup("equal").DocumentOK()
	if !ok {
		return r, bad("%s: equal must be a document", name)
	}
	elements, err := equal.Elements()
	if err != nil {
		return r, bad("%s: equal: %v", name, err)
	}
	for _, e := range elements {
		if !fieldName.MatchString(e.Key()) {
			return r, bad("%s: %q is not a top-level field name", name, e.Key())
		}
		j, err := jsonbOf(e.Value())
		if err != nil {
			return r, err
		}
		r.equal = append(r.equal, fieldValue{e.Key(), j})
	}
	sort, ok := body.Lookup("sort").DocumentOK()
	if !ok {
		return r, bad("%s: sort must be a document", name)
	}
	if elements, err = sort.Elements(); err != nil || len(elements) == 0 {
		return r, bad("%s: sort names no field", name)
	}
	for i, e := range elements {
		direction, isNumber := e.Value().AsInt64OK()
		if !isNumber || (direction != 1 && direction != -1) {
			return r, bad("%s: sort %q must be 1 or -1", name, e.Key())
		}
		if !fieldName.MatchString(e.Key()) {
			return r, bad("%s: %q is not a top-level field name", name, e.Key())
		}
		if i > 0 && (direction == -1) != r.descending {
			return r, bad("%s: every sort field takes one direction", name)
		}
		r.descending = direction == -1
		r.sort = append(r.sort, e.Key())
	}
	if after, isDoc := body.Lookup("after").DocumentOK(); isDoc {
		for _, f := range r.sort {
			v, err := after.LookupErr(f)
			if err != nil {
				return r, bad("%s: after must name every sort field (%q)", name, f)
			}
			j, err := jsonbOf(v)
			if err != nil {
				return r, err
			}
			r.after = append(r.after, j)
		}
	}
	if v, err := body.LookupErr("skip"); err == nil {
		if r.skip, ok = v.AsInt64OK(); !ok || r.skip < 0 {
			return r, bad("%s: skip must be a whole number ≥ 0", name)
		}
	}
	if r.limit, ok = body.Lookup("limit").AsInt64OK(); !ok || r.limit < 1 || r.limit > 1000 {
		return r, bad("%s: limit must be a whole number from 1 to 1000", name)
	}
	if name == pageIdsByLatestCommand {
		latest, err := parseLatest(body)
		if err != nil {
			return r, err
		}
		r.latest = &latest
	}
	return r, nil
}

func parseLatest(body bson.Raw) (latestFilter, error) {
	var l latestFilter
	doc, ok := body.Lookup("latest").DocumentOK()
	if !ok {
		return l, bad("pageIdsByLatest: latest must be a document")
	}
	if separator, err := doc.LookupErr("separator"); err == nil {
		s, isString := separator.StringValueOK()
		if l.separator, _, err = parseSeparator(s, isString); err != nil {
			return l, bad("pageIdsByLatest: latest.%v", err)
		}
	}
	names := map[string]*string{"from": &l.from, "link": &l.link, "order": &l.order, "field": &l.field, "fallback": &l.fallback}
	for key, target := range names {
		if key == "link" && l.separator != "" {
			continue
		}
		v, ok := doc.Lookup(key).StringValueOK()
		if !ok || v == "" {
			return l, bad("pageIdsByLatest: latest.%s must be a non-empty string", key)
		}
		if key != "from" && !fieldName.MatchString(v) {
			return l, bad("pageIdsByLatest: latest.%s: %q is not a top-level field name", key, v)
		}
		*target = v
	}
	equals, err := doc.LookupErr("equals")
	if err != nil {
		return l, bad("pageIdsByLatest: latest.equals is missing")
	}
	if l.equals, err = jsonbOf(equals); err != nil {
		return l, err
	}
	return l, nil
}

// jsonbOf is a value as FerretDB's PostgreSQL backend stores it in `_jsonb`.
func jsonbOf(v bson.RawValue) (string, error) {
	switch v.Type {
	case bsontype.String:
		return jsonString(v.StringValue()), nil
	case bsontype.DateTime:
		return strconv.FormatInt(v.DateTime(), 10), nil
	case bsontype.Int32:
		return strconv.FormatInt(int64(v.Int32()), 10), nil
	case bsontype.Int64:
		return strconv.FormatInt(v.Int64(), 10), nil
	case bsontype.Double:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", bad("pageIds: %v is not a value a page can compare", f)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case bsontype.Boolean:
		return strconv.FormatBool(v.Boolean()), nil
	}
	return "", bad("pageIds: values of type %s are not supported", v.Type)
}

func field(name string) string { return "_jsonb->'" + name + "'" }

// jsonString is a string as `_jsonb` holds it (a JSON string; marshalling a string cannot fail).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (p *ownCommands) page(ctx context.Context, r pageRequest) (pageResult, error) {
	result := pageResult{IDs: []string{}, OK: 1}
	var examined int64
	collections := []string{r.collection}
	if r.latest != nil {
		result.Examined = &examined
		collections = append(collections, r.latest.from)
	}
	tables, err := p.tablesOf(ctx, r.db, collections...)
	table, found := tables[r.collection]
	if err != nil || !found {
		// No such database or collection: an empty page, as FerretDB answers a find on one.
		return result, err
	}
	// Aliased, so that a record's subquery names the document's `_id`; the other conditions name
	// `_jsonb` alone, which at this level is the document's.
	from := pgx.Identifier{r.db, table}.Sanitize() + " AS d"
	var where []string
	var args []interface{}
	for _, e := range r.equal {
		args = append(args, e.json)
		where = append(where, fmt.Sprintf("%s = $%d::jsonb", field(e.field), len(args)))
	}
	examinedSQL := "SELECT count(*) FROM " + from + whereClause(where)
	examinedArgs := append([]interface{}(nil), args...)
	if r.latest != nil {
		where = append(where, latestCondition(r.db, *r.latest, tables[r.latest.from], &args))
	}
	countSQL := "SELECT count(*) FROM " + from + whereClause(where)
	countArgs := append([]interface{}(nil), args...)
	if r.after != nil {
		where = append(where, keyset(r.sort, r.after, r.descending, &args))
	}
	direction := " ASC"
	if r.descending {
		direction = " DESC"
	}
	order := make([]string, len(r.sort))
	for i, f := range r.sort {
		order[i] = field(f) + direction
	}
	args = append(args, r.skip, r.limit)
	pageSQL := fmt.Sprintf("SELECT _jsonb->>'_id' FROM %s%s ORDER BY %s OFFSET $%d LIMIT $%d",
		from, whereClause(where), strings.Join(order, ", "), len(args)-1, len(args))

	batch := &pgx.Batch{}
	batch.Queue(pageSQL, args...)
	batch.Queue(countSQL, countArgs...)
	if r.latest != nil {
		batch.Queue(examinedSQL, examinedArgs...)
	}
	results := p.pool.SendBatch(ctx, batch)
	defer results.Close()
	rows, err := results.Query()
	if err != nil {
		return result, err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return result, err
		}
		result.IDs = append(result.IDs, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return result, err
	}
	if err := results.QueryRow().Scan(&result.Total); err != nil {
		return result, err
	}
	if r.latest != nil {
		if err := results.QueryRow().Scan(&examined); err != nil {
			return result, err
		}
	}
	return result, nil
}

// latestCondition is "the document's latest record in `from` (its table `recordsTable`) says
// `equals`, or it has none and its `fallback` does". With no such table, no document has a record.
func latestCondition(db string, l latestFilter, recordsTable string, args *[]interface{}) string {
	*args = append(*args, l.equals)
	equals := fmt.Sprintf("$%d::jsonb", len(*args))
	own := "d._jsonb->'" + l.fallback + "'"
	if recordsTable == "" {
		return own + " = " + equals
	}
	records := pgx.Identifier{db, recordsTable}.Sanitize()
	link := "r._jsonb->'" + l.link + "' = d._jsonb->'_id'"
	if l.separator != "" {
		// The record's `_id` in [document's + separator, document's + the next character): a
		// range of the `_id` btree.
		_, next, _ := parseSeparator(l.separator, true)
		*args = append(*args, l.separator, next)
		link = fmt.Sprintf("r._jsonb->'_id' >= to_jsonb((d._jsonb->>'_id') || $%d::text) AND r._jsonb->'_id' < to_jsonb((d._jsonb->>'_id') || $%d::text)",
			len(*args)-1, len(*args))
	}
	return fmt.Sprintf("coalesce((SELECT r._jsonb->'%s' FROM %s AS r WHERE %s ORDER BY r._jsonb->'%s' DESC LIMIT 1), %s) = %s",
		l.field, records, link, l.order, own, equals)
}

func whereClause(conditions []string) string {
	if len(conditions) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conditions, " AND ")
}

// keyset is "after (v1, v2, …) in the sort's order" written so that its first field is a plain
// range PostgreSQL takes to the index: f1 ≤ v1 AND (f1 < v1 OR (f2 ≤ v2 AND (f2 < v2 OR …))).
func keyset(fields, values []string, descending bool, args *[]interface{}) string {
	strict, loose := ">", ">="
	if descending {
		strict, loose = "<", "<="
	}
	var build func(i int) string
	build = func(i int) string {
		*args = append(*args, values[i])
		f, v := field(fields[i]), fmt.Sprintf("$%d::jsonb", len(*args))
		if i == len(fields)-1 {
			return f + " " + strict + " " + v
		}
		return fmt.Sprintf("(%s %s %s AND (%s %s %s OR %s))", f, loose, v, f, strict, v, build(i+1))
	}
	return build(0)
}

// opMsgReply is an OP_MSG answering `req` with one body document.
func opMsgReply(req []byte, doc interface{}) []byte {
	body, err := bson.Marshal(doc)
	if err != nil {
		body, _ = bson.Marshal(commandError{ErrMsg: err.Error(), Code: 1, CodeName: "InternalError"})
	}
	reply := make([]byte, headerBytes+4+1, headerBytes+4+1+len(body))
	reply = append(reply, body...)
	binary.LittleEndian.PutUint32(reply[0:4], uint32(len(reply)))
	binary.LittleEndian.PutUint32(reply[4:8], 0)
	copy(reply[8:12], req[4:8]) // responseTo: the request's id
	binary.LittleEndian.PutUint32(reply[12:16], opMsg)
	// flags (0) and the body section's kind (0) are the zeroed bytes 16–20.
	return reply
}
