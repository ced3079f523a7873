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

// limitLogEvery spaces the log lines of evicted, refused and delayed connections: a
// flood must not become a flood of logs.
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
	// The broken variants, for tests only. closeNewest is the policy before
	// eviction, which closes every connection beyond the cap whatever the others do,
	// so that a flood of idle connections holds the cap and refuses every newcomer.
	// refuseWhenBusy closes a newcomer that finds every connection with a request in
	// progress instead of holding it, so that a flood of requests, each short,
	// refuses the newcomers that arrive while they fill the cap.
	closeNewest, refuseWhenBusy bool
	// serveEvicted, the third, hands net/http the bytes a Read took from the kernel
	// while the eviction took the connection, as Read once did: the request is then
	// processed on a connection being closed, and its answer is lost.
	serveEvicted bool
}

// limitListener accepts every connection but keeps at most max open. To admit one
// beyond it, it closes the connection idle the longest: one that has sent nothing
// yet, or that waits for its next keep-alive request. Connections whose request has
// begun, down to a first byte still in the kernel's buffer, are never closed to
// admit another; when every connection has a request in progress, the new one waits,
// unread, until one of them ends, and the next ones in the kernel's queue. Unlike a
// listener that stops accepting at the limit, it never leaves a sender waiting
// behind idle connections; unlike one that closes every newcomer, it does not let a
// client that holds the cap with idle connections refuse everyone else: a
// provider's request follows its connection at once, a flood's never comes. The
// process keeps its file descriptors for the database.
//
// With a per-address limit, an address at it pays with its own connection idle the
// longest, or has its new one closed at once when all of its have a request in
// progress (waiting would stop the listener for everyone). A client address is an
// IPv4 address, or an IPv6 /64 (one host's usual share).
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

	// room is signalled when a connection ends or goes idle, for a newcomer held
	// while every connection had a request in progress; closed when the listener is.
	room   *sync.Cond
	closed bool

	// Evicted, refused and delayed connections since the last log line, and when it
	// was written (guarded by mu).
	evicted, refused, delayed int
	logged                    time.Time
}

// addrConns are the connections of one client address.
type addrConns struct {
	addr netip.Addr
	open int
	// idle holds the address's connections that have no request in progress,
	// longest idle first.
	idle list.List
}

func newLimitListener(ln net.Listener, cfg listenerConfig, logger *slog.Logger, metrics *Metrics) *limitListener {
	l := &limitListener{Listener: ln, cfg: cfg, logger: logger, metrics: metrics, addrs: map[netip.Addr]*addrConns{}}
	l.room = sync.NewCond(&l.mu)
	return l
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		for {
			tc, victim, full := l.admit(c)
			if victim != nil {
				_ = victim.Conn.Close()
			}
			if tc != nil {
				return tc, nil
			}
			if !full {
				_ = c.Close()
				break
			}
			if !l.waitForRoom() {
				_ = c.Close()
				return nil, net.ErrClosed
			}
		}
	}
}

// admit counts c in, as a connection that has sent nothing yet, and returns it with
// the idle connection closed to make room for it (nil when there was room). It
// returns no connection when c is refused (per address), or when every connection
// has a request in progress (full).
func (l *limitListener) admit(c net.Conn) (tc, victim *trackedConn, full bool) {
	addr := clientAddr(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	ac := l.addrs[addr]
	if ac == nil {
		ac = &addrConns{addr: addr}
		l.addrs[addr] = ac
	}
	switch {
	case l.cfg.perAddress > 0 && ac.open >= l.cfg.perAddress:
		if victim = l.evictLocked(limitPerAddress, &ac.idle); victim == nil {
			l.refuseLocked(ac, limitPerAddress)
			return nil, nil, false
		}
	case int(l.open.Load()) >= l.cfg.max:
		if victim = l.evictLocked(limitConnections, &l.idle); victim == nil {
			if l.cfg.closeNewest || l.cfg.refuseWhenBusy {
				l.refuseLocked(ac, limitConnections)
				return nil, nil, false
			}
			if ac.open == 0 {
				delete(l.addrs, addr)
			}
			return nil, nil, true
		}
	}
	tc = &trackedConn{Conn: c, l: l, conns: ac} // connBusy until idleLocked
	ac.open++
	l.open.Add(1)
	l.idleLocked(tc)
	l.metrics.connectionsOpen(l.cfg.name, l.open.Load())
	return tc, victim, false
}

// waitForRoom holds the accepted connection that found every other with a request
// in progress until one ends or goes idle, and further ones in the kernel's queue,
// since the loop accepts no other meanwhile: requests in progress end within the
// server's timeouts, and a provider's connection waits for them rather than be
// reset. It reports false when the listener was closed meanwhile.
func (l *limitListener) waitForRoom() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delayed++
	l.metrics.connectionDelayed(l.cfg.name)
	l.noteLocked(limitConnections)
	for int(l.open.Load()) >= l.cfg.max && l.idle.Len() == 0 && !l.closed {
		l.room.Wait()
	}
	return !l.closed
}

// Close closes the listener, and ends the wait of a connection held for room.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	l.room.Broadcast()
	l.mu.Unlock()
	return err
}

// evictLocked releases the front connection of idle, the one idle the longest, and
// gives it back for the caller to close; nil when idle is empty. A connection whose
// request's first bytes wait in the kernel, unread yet by its goroutine, has a
// request in progress: it is taken off the idle lists instead, and the next one
// tried.
func (l *limitListener) evictLocked(limit string, idle *list.List) *trackedConn {
	if l.cfg.closeNewest {
		return nil
	}
	for e := idle.Front(); e != nil; e = idle.Front() {
		c := e.Value.(*trackedConn)
		if pending(c.Conn) {
			c.state.CompareAndSwap(connIdle, connBusy)
		}
		// Not idle any more (a Read that returned bytes set it busy and waits for
		// the lock to leave the lists): leave it; else it is ours to close.
		if !c.state.CompareAndSwap(connIdle, connGone) {
			l.busyLocked(c)
			continue
		}
		l.releaseLocked(c)
		l.evicted++
		l.metrics.connectionEvicted(l.cfg.name, limit)
		l.noteLocked(limit)
		return c
	}
	return nil
}

func (l *limitListener) refuseLocked(ac *addrConns, limit string) {
	if ac.open == 0 {
		delete(l.addrs, ac.addr)
	}
	l.refused++
	l.metrics.connectionRefused(l.cfg.name, limit)
	l.noteLocked(limit)
}

// noteLocked logs the connections evicted, refused and delayed since the last line,
// at most once per limitLogEvery.
func (l *limitListener) noteLocked(limit string) {
	now := time.Now()
	if now.Sub(l.logged) < limitLogEvery {
		return
	}
	l.logger.Warn("hookinbox: connection limit reached; the connections idle the longest are closed to admit new ones",
		"listener", l.cfg.name, "limit", limit, "max_connections", l.cfg.max,
		"max_connections_per_address", l.cfg.perAddress, "evicted", l.evicted, "refused", l.refused, "delayed", l.delayed)
	l.logged, l.evicted, l.refused, l.delayed = now, 0, 0, 0
}

// idleLocked puts c at the back of the idle lists: it has no request in progress.
func (l *limitListener) idleLocked(c *trackedConn) {
	if c.released || !c.state.CompareAndSwap(connBusy, connIdle) {
		return
	}
	l.busyLocked(c) // a busy connection that has not left the lists yet
	c.idleAt = l.idle.PushBack(c)
	c.addrIdleAt = c.conns.idle.PushBack(c)
	l.room.Signal()
}

// busyLocked takes c off the idle lists, where it is no longer idle.
func (l *limitListener) busyLocked(c *trackedConn) {
	if c.idleAt == nil {
		return
	}
	l.idle.Remove(c.idleAt)
	c.conns.idle.Remove(c.addrIdleAt)
	c.idleAt, c.addrIdleAt = nil, nil
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
		delete(l.addrs, c.conns.addr)
	}
	l.open.Add(-1)
	l.metrics.connectionsOpen(l.cfg.name, l.open.Load())
	l.room.Signal()
}

// idleCount returns the number of idle connections.
func (l *limitListener) idleCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
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
		tc.state.CompareAndSwap(connIdle, connBusy)
		l.busyLocked(tc)
	}
}

// trackedConn is a connection of a limitListener.
type trackedConn struct {
	net.Conn
	l     *limitListener
	conns *addrConns

	// state is connIdle, connBusy or connGone. Read, which sees a request begin,
	// and the eviction, which ends an idle connection, race for it without the lock:
	// whichever swaps connIdle first wins.
	state atomic.Int32

	// Guarded by l.mu. A connection is on the idle lists while it is idle, and
	// perhaps briefly after it left that state.
	idleAt, addrIdleAt *list.Element
	released           bool
}

// The states of a trackedConn.
const (
	connBusy int32 = iota // a request in progress
	connIdle              // nothing sent yet, or between keep-alive requests
	connGone              // evicted
)

// Read marks the connection busy as soon as a request's first bytes arrive, before
// net/http has parsed its headers: a request in progress is never evicted. The
// eviction can take the connection between the kernel's read and that mark (its
// check for waiting bytes finds none: they were just read); then the bytes are
// dropped and the connection reported closed, so that no request is processed on a
// connection being closed, its answer lost after its receipt committed. The sender
// sees the connection closed with nothing received, and delivers again.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.state.Load() != connBusy {
		switch {
		case c.state.CompareAndSwap(connIdle, connBusy):
			c.l.mu.Lock()
			c.l.busyLocked(c)
			c.l.mu.Unlock()
		case c.state.Load() == connGone && !c.l.cfg.serveEvicted:
			return 0, net.ErrClosed
		}
	}
	return n, err
}

// SetReadDeadline shortens the deadline that net/http sets for a request's first
// byte (read_header_timeout) or for the next keep-alive request (idle_timeout) to
// pressureIdleTimeout while the listener is near its cap.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if c.state.Load() == connIdle && c.l.nearCap() {
		if short := time.Now().Add(pressureIdleTimeout); t.IsZero() || t.After(short) {
			t = short
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// CloseWrite half-closes the connection, as net/http does after its last answer
// when it leaves a request's body unread: the client sees the end of the answer
// before the close, which could otherwise reset it away.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection and gives its slot back, however often it is closed.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// clientAddr returns c's client address: the remote IPv4 address, or the /64 of
// an IPv6 one; the zero Addr for a connection that is not TCP.
func clientAddr(c net.Conn) netip.Addr {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	addr := a.AddrPort().Addr().Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.Addr()
	}
	return addr
}
