// Package flood is the hostile side of serve's flood tests and measurements: many
// connections from one or many client addresses that send nothing, bodies that stall,
// and clients that never read their answers. Each client reopens its connection
// whenever the server closes it, as an attacker does, until its context ends.
package flood

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Stats count what a flood did.
type Stats struct {
	// Open is the connections open now; Opened and Closed count them since the start
	// (Closed: by the server, or refused).
	Open, Opened, Closed atomic.Int64
	// DialErrors counts dials that failed.
	DialErrors atomic.Int64
}

// Flood runs clients against Target until the context passed to Run ends.
type Flood struct {
	// Target is the server's host:port.
	Target string
	// Sources are the local addresses the clients dial from, in turn; none: the
	// system's choice. 127.0.0.2 and above are on Linux's loopback.
	Sources []netip.Addr

	Stats Stats
	wg    sync.WaitGroup
	next  atomic.Int64
}

// Idle runs n clients that connect and send nothing.
func (f *Flood) Idle(ctx context.Context, n int) {
	f.run(ctx, n, func(c net.Conn) {})
}

// SlowBodies runs n clients that send the headers of a POST to path declaring a
// JSON body of declared bytes, then sent of them, and then stall.
func (f *Flood) SlowBodies(ctx context.Context, n int, path string, declared, sent int) {
	head := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: flood\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, declared)
	body := bytes.Repeat([]byte(" "), sent)
	f.run(ctx, n, func(c net.Conn) {
		_, _ = c.Write(head)
		_, _ = c.Write(body)
	})
}

// NeverRead runs n clients that send count copies of raw (keep-alive requests) at
// once and never read an answer, so that the server's writes block once the
// socket's buffers are full. They hold their connections until ctx ends: without
// reading, a client cannot see that the server closed one.
func (f *Flood) NeverRead(ctx context.Context, n int, raw []byte, count int) {
	all := bytes.Repeat(raw, count)
	f.run(ctx, n, func(c net.Conn) {
		_, _ = c.Write(all)
		<-ctx.Done()
	})
}

// Wait waits for every client to end, after their context did.
func (f *Flood) Wait() { f.wg.Wait() }

// run starts n clients, each of which dials, calls send, and waits for the server to
// close the connection, discarding what it answers, then dials again.
func (f *Flood) run(ctx context.Context, n int, send func(net.Conn)) {
	for range n {
		f.wg.Go(func() {
			for ctx.Err() == nil {
				c, err := f.dial(ctx)
				if err != nil {
					f.Stats.DialErrors.Add(1)
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond): // the port range or the backlog is exhausted
					}
					continue
				}
				f.Stats.Opened.Add(1)
				f.Stats.Open.Add(1)
				stop := context.AfterFunc(ctx, func() { _ = c.Close() })
				send(c)
				waitClosed(c)
				stop()
				_ = c.Close()
				f.Stats.Open.Add(-1)
				if ctx.Err() == nil {
					f.Stats.Closed.Add(1)
				}
			}
		})
	}
}

func (f *Flood) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	if len(f.Sources) > 0 {
		src := f.Sources[int(f.next.Add(1))%len(f.Sources)]
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	return d.DialContext(ctx, "tcp", f.Target)
}

// waitClosed blocks until the server closes c, discarding what it answers.
func waitClosed(c net.Conn) {
	_, _ = io.Copy(io.Discard, c)
}

// Loopback returns the addresses 127.0.0.from to 127.0.0.to.
func Loopback(from, to int) []netip.Addr {
	var addrs []netip.Addr
	for i := from; i <= to; i++ {
		addrs = append(addrs, netip.AddrFrom4([4]byte{127, 0, 0, byte(i)}))
	}
	return addrs
}
