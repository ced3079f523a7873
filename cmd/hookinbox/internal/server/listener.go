package server

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// limitLogEvery spaces the log lines of refused connections: a flood must not
// become a flood of logs.
const limitLogEvery = time.Minute

// limitListener accepts every connection but keeps at most max open: one beyond it is
// closed at once, before a byte is read. Unlike a listener that stops accepting at
// the limit, it never leaves a sender waiting in the kernel's queue behind idle
// connections, and the process keeps its file descriptors for the database. The
// connections that count are bounded in time by the server's timeouts, so a flood
// of idle ones drains by itself.
type limitListener struct {
	net.Listener
	max    int64
	logger *slog.Logger
	open   atomic.Int64

	// Refused connections since the last log line, and when it was written.
	refused atomic.Int64
	logged  atomic.Int64 // Unix nanoseconds
}

func newLimitListener(ln net.Listener, max int, logger *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), logger: logger}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.noteRefused()
			_ = c.Close()
			continue
		}
		return &limitConn{Conn: c, release: func() { l.open.Add(-1) }}, nil
	}
}

// limitConn gives its slot back once, however often it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// noteRefused counts a refused connection and logs the count at most once per
// limitLogEvery.
func (l *limitListener) noteRefused() {
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.logged.Load()
	if now-last < int64(limitLogEvery) || !l.logged.CompareAndSwap(last, now) {
		return
	}
	l.refused.Add(-n)
	l.logger.Warn("hookinbox: connection limit reached; new connections are closed until others end",
		"max_connections", l.max, "refused", n)
}
