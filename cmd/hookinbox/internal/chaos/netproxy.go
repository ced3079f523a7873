package chaos

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy that the harness puts between a hookinbox process and
// PostgreSQL, and between the dispatchers and the recording sink, to inject network
// faults: latency, blackholes (the bytes of one or both directions held, then let
// through in order, as when a partition heals and TCP retransmits), resets (RST to
// both ends, at whatever point the connection is), and, on a PostgreSQL link
// (pgwire.go), the cut of a transaction's COMMIT answer (the server has committed,
// the client never hears it), a claim's answer held past the lease, and a
// statement recording a delivery's result held on its way.
//
// It is written for the harness rather than taken from Shopify's toxiproxy: the
// COMMIT cut needs the PostgreSQL protocol (which message ends a transaction, and
// whether the answer says it committed), which toxiproxy's byte-stream toxics do not
// see; and its timeout toxic drops the bytes of a blackhole, which desynchronizes the
// protocol instead of modelling a partition that heals.
type Proxy struct {
	// Name names the link in reports ("db:serve", "sink").
	Name string
	// Target is the address connections are forwarded to.
	Target string
	// PG makes the proxy follow the PostgreSQL protocol, for COMMIT cuts, late claim
	// answers and late results.
	PG bool
	// LateHold is how long the answer of an armed late claim, or an armed late
	// result on its way, is held.
	LateHold time.Duration

	ln net.Listener

	mu    sync.Mutex
	conns map[*proxyConn]struct{}
	// gates hold a direction while closed: up (client to server) and down.
	gates [2]chan struct{}

	latency atomic.Int64 // added before each forwarded chunk, in nanoseconds
	// The faults asked for and not yet made: COMMIT cuts of a transaction that
	// wrote a receipt (armReceiving) and of any that wrote (armAny), late claim
	// answers (armLate) and late results (armLateResult).
	armReceiving, armAny, armLate, armLateResult atomic.Int32
	lateClaims, lateResults                      atomic.Int64

	cutsMu sync.Mutex
	cuts   []Cut

	resets atomic.Int64
}

// Cut is a transaction whose COMMIT answer the proxy cut: PostgreSQL committed it,
// and the client's connection was reset instead of receiving the answer.
type Cut struct {
	Link string
	// PID is the server process of the connection; TxStart is when the proxy
	// forwarded the transaction's first message (before the server's now() of it),
	// At when it cut the answer.
	PID       int32
	TxStart   time.Time
	At        time.Time
	Receiving bool // the transaction inserted into hookinbox_inbox
}

const (
	up   = 0
	down = 1

	// resetWait bounds a reset's wait for a connection to reset.
	resetWait = 10 * time.Second
)

// Start listens on a free port of 127.0.0.1.
func (p *Proxy) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("proxy %s: %w", p.Name, err)
	}
	p.ln = ln
	p.conns = map[*proxyConn]struct{}{}
	for d := range p.gates {
		p.gates[d] = make(chan struct{})
		close(p.gates[d])
	}
	go p.accept()
	return nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting and closes every connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Release()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close(false)
	}
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(client)
	}
}

func (p *Proxy) serve(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.Target, 5*time.Second)
	if err != nil {
		// The target is down (PostgreSQL stopped): the client sees its connection
		// closed, as a refused one.
		_ = client.Close()
		return
	}
	c := &proxyConn{p: p, client: client, server: server, done: make(chan struct{})}
	if p.PG {
		c.pg = &pgConn{idle: true}
	}
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { c.pump(up, client, server) })
	wg.Go(func() { c.pump(down, server, client) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// SetLatency adds d before every chunk forwarded, both ways; 0 removes it.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// Hold stops forwarding: the answers (down), or both directions. What arrives is
// kept, in order, until Release.
func (p *Proxy) Hold(answersOnly bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for d := range p.gates {
		if d == up && answersOnly {
			continue
		}
		if isOpen(p.gates[d]) {
			p.gates[d] = make(chan struct{})
		}
	}
}

// Release lets held bytes through.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for d := range p.gates {
		if !isOpen(p.gates[d]) {
			close(p.gates[d])
		}
	}
}

func isOpen(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (p *Proxy) gate(dir int) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gates[dir]
}

// Reset resets up to n connections drawn at random (RST to both ends) and returns
// how many it reset. When the link has none (its process is being restarted, or
// PostgreSQL is), it waits for one, up to resetWait.
func (p *Proxy) Reset(n int, r *rand.Rand) int {
	var conns []*proxyConn
	for deadline := time.Now().Add(resetWait); ; time.Sleep(20 * time.Millisecond) {
		p.mu.Lock()
		for c := range p.conns {
			if !c.closed.Load() {
				conns = append(conns, c)
			}
		}
		p.mu.Unlock()
		if len(conns) > 0 || time.Now().After(deadline) {
			break
		}
	}
	r.Shuffle(len(conns), func(i, j int) { conns[i], conns[j] = conns[j], conns[i] })
	done := 0
	for _, c := range conns[:min(n, len(conns))] {
		if c.close(true) {
			done++
		}
	}
	p.resets.Add(int64(done))
	return done
}

// Resets is how many connections were reset by Reset.
func (p *Proxy) Resets() int { return int(p.resets.Load()) }

// ArmCut asks for the next COMMIT answer to be cut: of a transaction that wrote a
// receipt, or of any transaction that wrote.
func (p *Proxy) ArmCut(receiving bool) {
	if receiving {
		p.armReceiving.Add(1)
	} else {
		p.armAny.Add(1)
	}
}

// ArmLateClaim asks for the answer of the next claim that takes work (a statement
// with SKIP LOCKED that returns rows) to be held for LateHold.
func (p *Proxy) ArmLateClaim() { p.armLate.Add(1) }

// LateClaims is how many claim answers were held.
func (p *Proxy) LateClaims() int { return int(p.lateClaims.Load()) }

// ArmLateResult asks for the next statement that records an outbox delivery's
// result to be held on its way to the server for LateHold.
func (p *Proxy) ArmLateResult() { p.armLateResult.Add(1) }

// LateResults is how many result statements were held.
func (p *Proxy) LateResults() int { return int(p.lateResults.Load()) }

// Cuts returns the COMMIT answers cut so far.
func (p *Proxy) Cuts() []Cut {
	p.cutsMu.Lock()
	defer p.cutsMu.Unlock()
	return append([]Cut(nil), p.cuts...)
}

// take uses up one armed cut of the kind, false when none is left.
func take(arm *atomic.Int32) bool {
	for {
		n := arm.Load()
		if n <= 0 {
			return false
		}
		if arm.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// proxyConn is one proxied connection.
type proxyConn struct {
	p              *Proxy
	client, server net.Conn
	pg             *pgConn // nil on a link that is not PostgreSQL's
	closed         atomic.Bool
	done           chan struct{} // closed with the connection
}

// close closes both ends, with an RST when reset; false if it was closed already.
func (c *proxyConn) close(reset bool) bool {
	if c.closed.Swap(true) {
		return false
	}
	close(c.done)
	for _, conn := range []net.Conn{c.client, c.server} {
		if tc, ok := conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}
	return true
}

// pump forwards one direction until either end closes, then closes both.
func (c *proxyConn) pump(dir int, src, dst net.Conn) {
	defer c.close(false)
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			out, action := buf[:n], forward
			if c.pg != nil {
				out, action = c.pg.observe(c, dir, out)
			}
			switch action {
			case cutConn:
				c.close(true)
				return
			case delay:
				select {
				case <-time.After(c.p.LateHold):
				case <-c.done:
					return
				}
			}
			if len(out) > 0 {
				<-c.p.gate(dir)
				if d := time.Duration(c.p.latency.Load()); d > 0 {
					time.Sleep(d)
				}
				if _, werr := dst.Write(out); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return // EOF, a reset or our own close: the other direction ends too
		}
	}
}
