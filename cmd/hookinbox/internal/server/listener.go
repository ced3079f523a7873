package server

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// limitLogEvery spaces the log lines of evicted and refused connections: a flood
// must not become a flood of logs.
const limitLogEvery = time.Minute

// pressureIdleTimeout replaces the first-byte and keep-alive idle timeouts while a
// listener holds more than three quarters of http.max_connections: a provider sends
// its request as soon as it has connected, a flood's connections send nothing.
const pressureIdleTimeout = time.Second

// The limits a connection can be evicted or refused for, as the metrics and the log
// line name them.
const (
	limitConnections = "max_connections"
	limitPerAddress  = "max_connections_per_address"
)

// listenerConfig is what a limitListener enforces.
type listenerConfig struct {
	// name is the listener's in the metrics: "main" or "console".
	name string
	// max bounds the connections open at once; perAddress those of one client
	// address (0: no bound).
	max, perAddress int
	// closeNewest is the broken variant, for tests only: the policy before
	// eviction, which closes every connection beyond the cap whatever the others do,
	// so that a flood of idle connections holds the cap and refuses every newcomer.
	closeNewest bool
}

// limitListener accepts every connection but keeps at most max open. To admit one
// beyond it, it closes the connection idle the longest: one that has sent nothing
// yet, or that waits for its next keep-alive request. Connections that have sent the
// first byte of a request are never closed to admit another; when every connection
// has a request in progress, the new one is closed at once, before a byte is read.
// Unlike a listener that stops accepting at the limit, it never leaves a sender
// waiting in the kernel's queue behind idle connections; unlike one that closes
// every newcomer, it does not let a client that holds the cap with idle connections
// refuse everyone else. The process keeps its file descriptors for the database.
//
// Its connections must be served by an http.Server whose ConnState is connState,
// which tells it when a connection becomes idle.
type limitListener struct {
	net.Listener
	cfg     listenerConfig
	logger  *slog.Logger
	metrics *Metrics

	mu sync.Mutex
	// idle holds the connections that have no request in progress, longest idle
	// first.
	idle  list.List
	addrs map[netip.Addr]*addrConns
	// open mirrors the number of open connections for SetReadDeadline, which reads it
	// without the lock.
	open atomic.Int64

	// Evicted and refused connections since the last log line, and when it was
	// written (guarded by mu).
	evicted, refused int
	logged           time.Time
}

// addrConns are the open and idle connections of one client address.
type addrConns struct {
	open int
	idle list.List
}

func newLimitListener(ln net.Listener, cfg listenerConfig, logger *slog.Logger, metrics *Metrics) *limitListener {
	return &limitListener{Listener: ln, cfg: cfg, logger: logger, metrics: metrics, addrs: map[netip.Addr]*addrConns{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, victim := l.admit(c)
		if victim != nil {
			_ = victim.Conn.Close()
		}
		if tc == nil {
			_ = c.Close()
			continue
		}
		return tc, nil
	}
}

// admit counts c in, as a connection that has sent nothing yet, and returns it with
// the idle connection closed to make room for it (nil when there was room), or nil
// when c is refused.
func (l *limitListener) admit(c net.Conn) (tc *trackedConn, victim *trackedConn) {
	addr := peerAddr(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	ac := l.addrs[addr]
	if ac == nil {
		ac = &addrConns{}
		l.addrs[addr] = ac
	}
	switch {
	case l.cfg.perAddress > 0 && ac.open >= l.cfg.perAddress:
		if victim = l.evictLocked(&ac.idle, limitPerAddress); victim == nil {
			l.refuseLocked(ac, addr, limitPerAddress)
			return nil, nil
		}
	case int(l.open.Load()) >= l.cfg.max:
		if victim = l.evictLocked(&l.idle, limitConnections); victim == nil {
			l.refuseLocked(ac, addr, limitConnections)
			return nil, nil
		}
	}
	tc = &trackedConn{Conn: c, l: l, addr: addr, conns: ac}
	ac.open++
	l.open.Add(1)
	l.idleLocked(tc)
	l.metrics.connectionsOpen(l.cfg.name, l.open.Load())
	return tc, victim
}

// evictLocked releases the front connection of idle, the one idle the longest, and
// returns it for the caller to close; nil when no connection is idle.
func (l *limitListener) evictLocked(idle *list.List, limit string) *trackedConn {
	front := idle.Front()
	if front == nil || l.cfg.closeNewest {
		return nil
	}
	victim := front.Value.(*trackedConn)
	l.releaseLocked(victim)
	l.evicted++
	l.metrics.connectionEvicted(l.cfg.name, limit)
	l.noteLocked(limit)
	return victim
}

func (l *limitListener) refuseLocked(ac *addrConns, addr netip.Addr, limit string) {
	if ac.open == 0 {
		delete(l.addrs, addr)
	}
	l.refused++
	l.metrics.connectionRefused(l.cfg.name, limit)
	l.noteLocked(limit)
}

// noteLocked logs the connections evicted and refused since the last line, at most
// once per limitLogEvery.
func (l *limitListener) noteLocked(limit string) {
	now := time.Now()
	if now.Sub(l.logged) < limitLogEvery {
		return
	}
	l.logger.Warn("hookinbox: connection limit reached; the connections idle the longest are closed to admit new ones",
		"listener", l.cfg.name, "limit", limit, "max_connections", l.cfg.max,
		"max_connections_per_address", l.cfg.perAddress, "evicted", l.evicted, "refused", l.refused)
	l.logged, l.evicted, l.refused = now, 0, 0
}

// idleLocked puts c at the back of the idle lists: it has no request in progress.
func (l *limitListener) idleLocked(c *trackedConn) {
	if c.released || c.idleAt != nil {
		return
	}
	c.idleAt = l.idle.PushBack(c)
	c.addrIdleAt = c.conns.idle.PushBack(c)
	c.waiting.Store(true)
}

// busyLocked takes c off the idle lists: a request is in progress.
func (l *limitListener) busyLocked(c *trackedConn) {
	if c.idleAt == nil {
		return
	}
	l.idle.Remove(c.idleAt)
	c.conns.idle.Remove(c.addrIdleAt)
	c.idleAt, c.addrIdleAt = nil, nil
	c.waiting.Store(false)
}

// releaseLocked gives c's slot back, once.
func (l *limitListener) releaseLocked(c *trackedConn) {
	if c.released {
		return
	}
	l.busyLocked(c)
	c.released = true
	c.conns.open--
	if c.conns.open == 0 {
		delete(l.addrs, c.addr)
	}
	l.open.Add(-1)
	l.metrics.connectionsOpen(l.cfg.name, l.open.Load())
}

// nearCap reports whether more than three quarters of the connections are open.
func (l *limitListener) nearCap() bool {
	return l.open.Load()*4 > int64(l.cfg.max)*3
}

// connState is the http.Server's ConnState hook for the listener's connections: it
// moves a connection onto the idle lists when its answer is written, and off them
// when a request arrives.
func connState(c net.Conn, state http.ConnState) {
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	l := tc.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateIdle:
		l.idleLocked(tc)
	case http.StateActive, http.StateHijacked:
		l.busyLocked(tc)
	}
}

// trackedConn is a connection of a limitListener.
type trackedConn struct {
	net.Conn
	l     *limitListener
	addr  netip.Addr
	conns *addrConns

	// waiting is set while the connection is on the idle lists: a Read that returns
	// bytes then starts a request. It is read without the lock on every Read.
	waiting atomic.Bool

	// Guarded by l.mu.
	idleAt, addrIdleAt *list.Element
	released           bool
}

// Read marks the connection busy as soon as a request's first bytes arrive, before
// net/http has parsed its headers: a request in progress is never evicted.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.waiting.Load() {
		c.l.mu.Lock()
		c.l.busyLocked(c)
		c.l.mu.Unlock()
	}
	return n, err
}

// SetReadDeadline shortens the deadline that net/http sets for a request's first
// byte (read_header_timeout) or for the next keep-alive request (idle_timeout) to
// pressureIdleTimeout while the listener is near its cap.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if c.waiting.Load() && c.l.nearCap() {
		if short := time.Now().Add(pressureIdleTimeout); t.IsZero() || t.After(short) {
			t = short
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// Close closes the connection and gives its slot back, however often it is closed.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// peerAddr returns c's remote IP address (IPv4 unmapped); the zero Addr for a
// connection that is not TCP.
func peerAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
