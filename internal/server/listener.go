package server

import (
	"net"
	"sync"
	"sync/atomic"
)

// limitListener accepts every connection but keeps at most max open: one beyond it is
// closed at once, before a byte is read. Unlike a listener that stops accepting at
// the limit, it never leaves a sender waiting in the kernel's queue behind idle
// connections, and the process keeps its file descriptors for the database. The
// connections that count are bounded in time by the server's timeouts, so a flood
// of idle ones drains by itself.
type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused atomic.Int64
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refused.Add(1)
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
