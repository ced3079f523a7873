package chaos

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// pgConn follows one proxied connection's PostgreSQL protocol (version 3) far enough
// to cut a COMMIT answer: it frames the messages of both directions, remembers the
// text of prepared statements, tells a transaction that inserted into hookinbox_inbox
// (a receiving one) from one that only wrote, and holds the answer to the message
// that ends such a transaction (a simple query, or an extended-protocol Sync) until
// its ReadyForQuery: when that says the transaction committed (idle, with no error
// and no ROLLBACK), the answer is dropped and the connection reset. The server
// committed; the client sees its connection die during COMMIT.
//
// It also delays the answer of a claim (a statement with SKIP LOCKED) that took work
// (returned rows) past the lease: the worker or dispatcher hears of its claim when
// another may have claimed the same rows again, and carries on as a zombie. And it
// delays in transit the statement that records an outbox delivery's result (it
// writes hookinbox_delivery): it reaches the server past the lease, when another
// dispatcher may have delivered and recorded the message again.
type pgConn struct {
	mu sync.Mutex
	// upBuf and downBuf hold the start of a message not yet complete.
	upBuf, downBuf []byte
	started        bool // the client's untyped startup message was seen
	plain          bool // not followed: an SSL, GSS or cancel request
	pid            int32
	stmts          map[string]string

	idle              bool // the last ReadyForQuery said idle: a transaction starts next
	txStart           time.Time
	txInbox, txWrites bool
	exClaim           bool // the exchange being sent holds a claim

	// candidate: the answer of the exchange just sent is held, to be cut if it ends
	// in a commit; receiving says which armed cut it takes.
	candidate, receiving bool
	held                 []byte
	heldFailed           bool
	// late: the answer of the exchange just sent, a claim, is held to be delayed if
	// it returned rows.
	late, lateRows bool
}

// Actions of observe on what it read, besides forwarding.
const (
	forward = iota
	cutConn // reset the connection instead
	delay   // forward after the proxy's LateClaimHold
)

const (
	codeSSLRequest    = 80877103
	codeGSSENCRequest = 80877104
	codeCancelRequest = 80877102
)

// observe takes a chunk read in direction dir and returns the bytes to forward, and
// what to do with them.
func (g *pgConn) observe(c *proxyConn, dir int, chunk []byte) ([]byte, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.plain {
		return chunk, forward
	}
	if dir == up {
		return g.observeUp(c, chunk)
	}
	return g.observeDown(c, chunk)
}

func (g *pgConn) observeUp(c *proxyConn, chunk []byte) ([]byte, int) {
	g.upBuf = append(g.upBuf, chunk...)
	var out []byte
	action := forward
	for {
		if !g.started {
			if len(g.upBuf) < 8 {
				return out, action
			}
			n := int(binary.BigEndian.Uint32(g.upBuf))
			switch binary.BigEndian.Uint32(g.upBuf[4:]) {
			case codeSSLRequest, codeGSSENCRequest, codeCancelRequest:
				// The server may answer a single untyped byte: stop following.
				g.plain = true
				out = append(out, g.upBuf...)
				g.upBuf = nil
				return out, action
			}
			if len(g.upBuf) < n {
				return out, action
			}
			out = append(out, g.upBuf[:n]...)
			g.upBuf = g.upBuf[n:]
			g.started = true
			continue
		}
		msg, ok := frame(g.upBuf)
		if !ok {
			return out, action
		}
		g.upBuf = g.upBuf[len(msg):]
		if g.clientMessage(c, msg) {
			action = delay
		}
		out = append(out, msg...)
	}
}

// clientMessage tracks what the transaction does, and decides at the end of each
// exchange whether its answer is held for a cut. It reports whether the message is
// to be delayed in transit (a late result).
func (g *pgConn) clientMessage(c *proxyConn, msg []byte) bool {
	typ, body := msg[0], msg[5:]
	if typ == 'X' {
		return false
	}
	late := false
	if g.idle {
		g.idle = false
		g.txStart, g.txInbox, g.txWrites = time.Now(), false, false
	}
	switch typ {
	case 'P': // Parse: statement name, query
		name, rest := cstring(body)
		query, _ := cstring(rest)
		if g.stmts == nil {
			g.stmts = map[string]string{}
		}
		g.stmts[name] = query // classified when bound: a Parse alone executes nothing
	case 'B': // Bind: portal, statement
		_, rest := cstring(body)
		stmt, _ := cstring(rest)
		late = g.classify(c, g.stmts[stmt])
	case 'Q':
		query, _ := cstring(body)
		late = g.classify(c, query)
	}
	if (typ == 'Q' || typ == 'S') && !g.candidate && !g.late {
		switch {
		case g.txInbox && c.p.armReceiving.Load() > 0:
			g.candidate, g.receiving = true, true
		case g.txWrites && c.p.armAny.Load() > 0:
			g.candidate, g.receiving = true, false
		case g.exClaim && c.p.armLate.Load() > 0:
			g.late, g.lateRows = true, false
		}
	}
	if typ == 'Q' || typ == 'S' {
		g.exClaim = false
	}
	return late
}

// classify notes what an executed statement writes, and reports whether it is to be
// delayed as a late result.
func (g *pgConn) classify(c *proxyConn, query string) bool {
	q := strings.ToLower(query)
	late := strings.Contains(q, "insert into hookinbox_delivery") && take(&c.p.armLateResult)
	if late {
		c.p.lateResults.Add(1)
	}
	if strings.Contains(q, "skip locked") {
		g.exClaim = true
	}
	if strings.Contains(q, "insert into hookinbox_inbox") {
		g.txInbox = true
	}
	if strings.Contains(q, "insert ") || strings.Contains(q, "update ") || strings.Contains(q, "delete ") {
		g.txWrites = true
	}
	return late
}

func (g *pgConn) observeDown(c *proxyConn, chunk []byte) ([]byte, int) {
	g.downBuf = append(g.downBuf, chunk...)
	var out []byte
	action := forward
	for {
		msg, ok := frame(g.downBuf)
		if !ok {
			return out, action
		}
		g.downBuf = g.downBuf[len(msg):]
		typ, body := msg[0], msg[5:]
		if typ == 'K' && len(body) >= 4 {
			g.pid = int32(binary.BigEndian.Uint32(body))
		}
		if g.late {
			g.held = append(g.held, msg...)
			switch typ {
			case 'D':
				g.lateRows = true
			case 'Z':
				out = append(out, g.held...)
				g.held, g.late = nil, false
				g.idle = len(body) > 0 && body[0] == 'I'
				if g.lateRows && take(&c.p.armLate) {
					c.p.lateClaims.Add(1)
					action = delay // the client sends nothing before this answer
				}
			}
			continue
		}
		if !g.candidate {
			out = append(out, msg...)
			if typ == 'Z' && len(body) > 0 {
				g.idle = body[0] == 'I'
			}
			continue
		}
		g.held = append(g.held, msg...)
		switch typ {
		case 'E':
			g.heldFailed = true
		case 'C':
			if bytes.HasPrefix(body, []byte("ROLLBACK")) {
				g.heldFailed = true
			}
		case 'Z':
			committed := len(body) > 0 && body[0] == 'I' && !g.heldFailed
			arm := &c.p.armAny
			if g.receiving {
				arm = &c.p.armReceiving
			}
			if committed && take(arm) {
				c.p.cutsMu.Lock()
				c.p.cuts = append(c.p.cuts, Cut{Link: c.p.Name, PID: g.pid, TxStart: g.txStart, At: time.Now(), Receiving: g.receiving})
				c.p.cutsMu.Unlock()
				return nil, cutConn
			}
			out = append(out, g.held...)
			g.held, g.candidate, g.heldFailed = nil, false, false
			g.idle = len(body) > 0 && body[0] == 'I'
		}
	}
}

// frame returns the first complete typed message of buf (type, length, body).
func frame(buf []byte) ([]byte, bool) {
	if len(buf) < 5 {
		return nil, false
	}
	n := 1 + int(binary.BigEndian.Uint32(buf[1:]))
	if len(buf) < n {
		return nil, false
	}
	return buf[:n], true
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}
