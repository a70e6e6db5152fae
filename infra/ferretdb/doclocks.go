package main

import (
	"encoding/binary"
	"sort"
	"sync"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// FerretDB 1.24's PostgreSQL backend runs an update as a read, the filter and the update applied
// in Go, then a write by _id, with no lock between the read and the write. Two updates of one
// document at once both read it, both match their filter and both write: the second write drops
// the first (a lost update), and a compare-and-set on a version field does not hold: several
// writers can all report success on the same version. One process serialising its own writes
// per document hides it; two replicas of a service do not, and lose writes such as outbox events.
//
// The gate therefore runs the commands that change documents one at a time per document:
// `update` and `findAndModify` whose every statement filters on `_id` wait only for other
// writes of the same documents; one that does not name its documents (updateMany by a field)
// waits for every write to its collection, and they for it.

const (
	checksumPresent = 1 << 0
)

type writeKey struct {
	namespace string
	// ids are the _id values (BSON type byte + value) the command writes; nil: any document.
	ids []string
}

type collectionLocks struct {
	whole sync.RWMutex
	mu    sync.Mutex
	ids   map[string]*idLock
}

type idLock struct {
	mu   sync.Mutex
	refs int
}

type docLocks struct {
	mu          sync.Mutex
	collections map[string]*collectionLocks
}

func newDocLocks() *docLocks {
	return &docLocks{collections: map[string]*collectionLocks{}}
}

func (d *docLocks) collection(namespace string) *collectionLocks {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.collections[namespace]
	if !ok {
		c = &collectionLocks{ids: map[string]*idLock{}}
		d.collections[namespace] = c
	}
	return c
}

// lock takes what the write needs and returns what releases it.
func (d *docLocks) lock(k writeKey) func() {
	c := d.collection(k.namespace)
	if k.ids == nil {
		c.whole.Lock()
		return c.whole.Unlock
	}
	c.whole.RLock()
	// In one order, so two commands naming the same documents never wait for each other in a circle.
	ids := append([]string(nil), k.ids...)
	sort.Strings(ids)
	held := make([]*idLock, 0, len(ids))
	for i, id := range ids {
		if i > 0 && ids[i-1] == id {
			continue
		}
		c.mu.Lock()
		l, ok := c.ids[id]
		if !ok {
			l = &idLock{}
			c.ids[id] = l
		}
		l.refs++
		c.mu.Unlock()
		l.mu.Lock()
		held = append(held, l)
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].mu.Unlock()
		}
		c.mu.Lock()
		for _, l := range held {
			l.refs--
		}
		for id, l := range c.ids {
			if l.refs == 0 {
				delete(c.ids, id)
			}
		}
		c.mu.Unlock()
		c.whole.RUnlock()
	}
}

// opMsgCommand is an OP_MSG's command: its body section and its document sequences by name.
type opMsgCommand struct {
	body      bson.Raw
	sequences map[string][]bson.Raw
}

// parseOpMsg reads an OP_MSG's sections, or ok=false when it cannot (another opcode, a bad frame).
func parseOpMsg(msg []byte) (c opMsgCommand, ok bool) {
	if len(msg) < headerBytes+5 || int32(binary.LittleEndian.Uint32(msg[12:16])) != opMsg {
		return c, false
	}
	flags := binary.LittleEndian.Uint32(msg[headerBytes : headerBytes+4])
	end := len(msg)
	if flags&checksumPresent != 0 {
		end -= 4
	}
	c.sequences = map[string][]bson.Raw{}
	for pos := headerBytes + 4; pos < end; {
		kind := msg[pos]
		pos++
		if pos+4 > end {
			return c, false
		}
		size := int(int32(binary.LittleEndian.Uint32(msg[pos : pos+4])))
		if size < 5 || pos+size > end {
			return c, false
		}
		switch kind {
		case 0:
			c.body = bson.Raw(msg[pos : pos+size])
		case 1:
			section := msg[pos+4 : pos+size]
			nameEnd := 0
			for nameEnd < len(section) && section[nameEnd] != 0 {
				nameEnd++
			}
			if nameEnd >= len(section) {
				return c, false
			}
			name := string(section[:nameEnd])
			for docs := section[nameEnd+1:]; len(docs) >= 5; {
				n := int(int32(binary.LittleEndian.Uint32(docs[:4])))
				if n < 5 || n > len(docs) {
					return c, false
				}
				c.sequences[name] = append(c.sequences[name], bson.Raw(docs[:n]))
				docs = docs[n:]
			}
		default:
			return c, false
		}
		pos += size
	}
	return c, c.body != nil
}

// writeKeyOf says which documents an OP_MSG command writes, or ok=false when it writes none
// this gate needs to order (reads, inserts, deletes, anything it cannot read).
func writeKeyOf(command opMsgCommand) (k writeKey, ok bool) {
	body, sequences := command.body, command.sequences
	first, err := body.IndexErr(0)
	if err != nil {
		return k, false
	}
	name := first.Key()
	collection, isString := first.Value().StringValueOK()
	if !isString {
		return k, false
	}
	db, _ := body.Lookup("$db").StringValueOK()
	k.namespace = db + "." + collection
	var filters []bson.Raw
	switch name {
	case "update":
		statements := sequences["updates"]
		if arr, isArray := body.Lookup("updates").ArrayOK(); isArray {
			values, err := arr.Values()
			if err != nil {
				return k, false
			}
			for _, v := range values {
				if doc, isDoc := v.DocumentOK(); isDoc {
					statements = append(statements, doc)
				}
			}
		}
		for _, s := range statements {
			q, isDoc := s.Lookup("q").DocumentOK()
			if !isDoc {
				return writeKey{namespace: k.namespace}, true
			}
			filters = append(filters, q)
		}
	case "findAndModify", "findandmodify":
		q, isDoc := body.Lookup("query").DocumentOK()
		if !isDoc {
			return writeKey{namespace: k.namespace}, true
		}
		filters = append(filters, q)
	default:
		return k, false
	}
	if len(filters) == 0 {
		return k, false
	}
	for _, q := range filters {
		id, err := q.LookupErr("_id")
		// Only a plain value names one document; an operator document ($in, …) or none does not.
		if err != nil || id.Type == bsontype.EmbeddedDocument {
			return writeKey{namespace: k.namespace}, true
		}
		k.ids = append(k.ids, string(append([]byte{byte(id.Type)}, id.Value...)))
	}
	return k, true
}
