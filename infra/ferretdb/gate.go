package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
)

// FerretDB 1.24's PostgreSQL backend deadlocks on its own connection pool: an update holds one
// pool connection for its Query while UpdateAll waits for a second one to begin a transaction.
// With as many concurrent updates as the pool has connections, every connection is a held query
// waiting for another in pgxpool.Acquire under UpdateAll, forever. The gate below sits in front of
// FerretDB and lets at most `limit` commands run at once, so that 2 × limit stays below the pool
// size; idle client connections and open cursors are not limited. It frames MongoDB wire messages
// by their length header and forwards them whole on one backend connection per client connection,
// so sessions and cursors keep their meaning.
//
// Likewise, one `update` command with N statements (a bulkWrite of N updateOne) holds N pool
// connections until it ends, so a bulkWrite with more updates than the pool has connections
// deadlocks it. The services therefore send single-statement updates only
// (docs/decisions/embedded-mongodb-wire-default.md).

const (
	opMsg       = 2013
	moreToCome  = 1 << 1
	headerBytes = 16
	maxMessage  = 48 << 20
)

type gate struct {
	backend string
	slots   chan struct{}
	// Writes of one document run one at a time (doclocks.go says why).
	locks *docLocks
	// The wrapper's own commands (pageIds, pageIdsByLatest, removeIdRange: pages.go, idranges.go); nil where FerretDB runs on SQLite.
	commands *ownCommands
	logger   *slog.Logger
}

func newGate(backend string, limit int, commands *ownCommands, logger *slog.Logger) *gate {
	return &gate{backend: backend, slots: make(chan struct{}, limit), locks: newDocLocks(), commands: commands, logger: logger}
}

func (g *gate) serve(l net.Listener) error {
	for {
		client, err := l.Accept()
		if err != nil {
			return err
		}
		go g.handle(client)
	}
}

// readMessage reads one whole wire message and returns it with its opcode and OP_MSG flags.
func readMessage(r io.Reader) (msg []byte, opCode int32, flags uint32, err error) {
	header := make([]byte, headerBytes)
	if _, err = io.ReadFull(r, header); err != nil {
		return nil, 0, 0, err
	}
	length := int32(binary.LittleEndian.Uint32(header[0:4]))
	if length < headerBytes || length > maxMessage {
		return nil, 0, 0, fmt.Errorf("bad message length %d", length)
	}
	msg = make([]byte, length)
	copy(msg, header)
	if _, err = io.ReadFull(r, msg[headerBytes:]); err != nil {
		return nil, 0, 0, err
	}
	opCode = int32(binary.LittleEndian.Uint32(header[12:16]))
	if opCode == opMsg && length >= headerBytes+4 {
		flags = binary.LittleEndian.Uint32(msg[headerBytes : headerBytes+4])
	}
	return msg, opCode, flags, nil
}

func (g *gate) handle(client net.Conn) {
	defer client.Close()
	backend, err := net.Dial("tcp", g.backend)
	if err != nil {
		g.logger.Warn("gate: backend unreachable", "err", err)
		return
	}
	defer backend.Close()
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); backend.Close() }) }
	defer closeBoth()
	for {
		req, opCode, flags, err := readMessage(client)
		if err != nil {
			return
		}
		expectReply := !(opCode == opMsg && flags&moreToCome != 0)
		// The document locks first, then a slot: a command holding a slot never waits for a lock.
		release := func() {}
		if command, ok := parseOpMsg(req); ok {
			if g.commands != nil && expectReply && isOwnCommand(command) {
				if _, err := client.Write(g.commands.answer(context.Background(), req, command)); err != nil {
					return
				}
				continue
			}
			if k, ok := writeKeyOf(command); ok {
				release = g.locks.lock(k)
			}
		}
		g.slots <- struct{}{}
		replies, err := g.exchange(backend, req, expectReply)
		<-g.slots
		release()
		if err != nil {
			return
		}
		for _, reply := range replies {
			if _, err := client.Write(reply); err != nil {
				return
			}
		}
	}
}

// exchange sends one request and reads its replies (several while the server streams with moreToCome).
func (g *gate) exchange(backend net.Conn, req []byte, expectReply bool) ([][]byte, error) {
	if _, err := backend.Write(req); err != nil {
		return nil, err
	}
	if !expectReply {
		return nil, nil
	}
	var replies [][]byte
	for {
		reply, opCode, flags, err := readMessage(backend)
		if err != nil {
			return nil, err
		}
		replies = append(replies, reply)
		if !(opCode == opMsg && flags&moreToCome != 0) {
			return replies, nil
		}
	}
}
