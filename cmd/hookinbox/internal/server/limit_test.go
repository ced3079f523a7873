//go:build linux

// Linux only: the clients dial from 127.0.0.2 and above, which Linux's loopback
// holds and other systems' do not without configuration.

package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The connection limits (http.max_connections, http.max_connections_per_address)
// against the real server: idle connections pay for a newcomer, a request in
// progress never does. Each test holds its connections in a known state (idle
// keep-alive ones answered once, busy ones dribbling a body) and waits for the
// server to count them before the connection it is about.

// limitServer is a hostile server with http.max_connections at limit whose idle and
// read timeouts are long enough never to close a held connection by themselves.
func limitServer(t *testing.T, limit int, mutate func(*Server)) *hostileServer {
	t.Helper()
	return startHostileServer(t, limit, func(s *Server) {
		s.srv.ReadHeaderTimeout, s.srv.ReadTimeout, s.srv.IdleTimeout = time.Hour, time.Hour, time.Hour
		if mutate != nil {
			mutate(s)
		}
	})
}

// holdFrom opens n keep-alive connections from src (the zero Addr: the system's
// choice), each answered once and then idle, in order: the first is idle the longest.
func holdFrom(t *testing.T, h *hostileServer, n int, src netip.Addr) []net.Conn {
	t.Helper()
	held := make([]net.Conn, 0, n)
	for i := range n {
		c := h.dialFrom(t, src)
		body := stripeBody(fmt.Sprintf("evt_control_held_%s_%d", src, i), "invoice.paid")
		_, _ = c.Write(request("POST", "/control", append(stripeSigned(body, time.Now()), header{"Connection", "keep-alive"}), body))
		_ = c.SetReadDeadline(time.Now().Add(hostileGuard))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
		resp.Body.Close()
		held = append(held, c)
	}
	return held
}

// busyFrom opens n connections from src that each send the headers of a delivery
// declaring a 4 KiB body and then dribble it, a byte every 100 ms, until the test
// ends or the connection is closed: requests in progress. It returns them once the
// server is reading every one of their bodies.
func busyFrom(t *testing.T, h *hostileServer, n int, src netip.Addr) []net.Conn {
	t.Helper()
	before := h.srv.budget.inflight.Load()
	body := stripeBody("evt_hostile_busy", "invoice.paid")
	busy := make([]net.Conn, 0, n)
	for range n {
		c := h.dialFrom(t, src)
		_, _ = c.Write(request("POST", "/control", append(stripeSigned(body, time.Now()), header{"Content-Length", "4096"}), nil))
		t.Cleanup(dribble(c, func(int) []byte { return []byte(" ") }))
		busy = append(busy, c)
	}
	waitUntil(t, fmt.Sprintf("the server to read %d bodies", n), func() bool {
		return h.srv.budget.inflight.Load() >= before+int64(n)*4096
	})
	return busy
}

// dialFrom opens a connection to the server from src (the zero Addr: the system's
// choice).
func (h *hostileServer) dialFrom(t *testing.T, src netip.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: hostileGuard}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	c, err := d.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exchangeFrom is exchange on a connection from src.
func (h *hostileServer) exchangeFrom(t *testing.T, src netip.Addr, raw []byte) string {
	t.Helper()
	c := h.dialFrom(t, src)
	defer c.Close()
	if _, err := c.Write(raw); err != nil && !isClosed(err) {
		t.Fatalf("write: %v", err)
	}
	return h.answer(t, c)
}

// isOpen reports whether the server still holds c open: a read finds neither data
// nor a close before a short deadline.
func isOpen(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// controlRaw is a signed delivery to the control endpoint, on a connection of its own.
func controlRaw(id string) []byte {
	body := stripeBody(id, "invoice.paid")
	return request("POST", "/control", stripeSigned(body, time.Now()), body)
}

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// waitUntil polls cond every 20 ms until it holds, failing the test after
// hostileGuard.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hostileGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// limitHeld fills a server of limit 20 with 3 idle connections from 127.0.0.2, then
// 12 from 127.0.0.3 (all of which went idle below three quarters of the cap, so
// their idle timeout of an hour stands), and 5 busy ones. It returns the idle ones
// of each address, in the order they went idle.
func limitHeld(t *testing.T, h *hostileServer) (two, three []net.Conn) {
	t.Helper()
	two = h.holdIdle(t, 3, netip.MustParseAddr("127.0.0.2"))
	three = h.holdIdle(t, 12, netip.MustParseAddr("127.0.0.3"))
	busyFrom(t, h, 5, netip.Addr{})
	return two, three
}

// holdIdle is holdFrom that returns once the server counts every connection it holds
// idle, these n among them: none of them goes idle after what the test does next.
func (h *hostileServer) holdIdle(t *testing.T, n int, src netip.Addr) []net.Conn {
	t.Helper()
	var l *limitListener
	waitUntil(t, "the main listener", func() bool { l = h.srv.main.Load(); return l != nil })
	before := l.idleCount()
	held := holdFrom(t, h, n, src)
	waitUntil(t, fmt.Sprintf("%d connections idle", before+n), func() bool { return l.idleCount() == before+n })
	return held
}

// A connection beyond http.max_connections is served: the connection idle the
// longest is closed to make room; the other idle ones and the busy ones stay.
func TestHostile_ConnectionBeyondTheLimitEvictsTheLongestIdle(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 20, nil)
	two, three := limitHeld(t, h)
	if got := h.exchange(t, controlRaw("evt_control_limit")); got != "200" {
		t.Fatalf("connection 21 answered %s, want 200", got)
	}
	h.waitClosed(t, two[0], "the connection idle the longest")
	if !isOpen(two[1]) || !isOpen(three[0]) {
		t.Errorf("another idle connection was closed too")
	}
	if n := h.srv.budget.inflight.Load(); n != 5*4096 {
		t.Errorf("bodies in progress = %d bytes, want all 5 still read", n)
	}
	if !strings.Contains(h.logs.String(), "connection limit reached") {
		t.Errorf("the eviction was not logged")
	}
	if n := metricValue(t, h.srv.metrics.http.evicted.WithLabelValues("main", limitConnections)); n != 1 {
		t.Errorf("hookinbox_http_connections_evicted_total = %v, want 1", n)
	}
}

// When every connection has a request in progress, a connection beyond the limit is
// held unread, none in progress cut for it, and served once one of them ends.
func TestHostile_ConnectionBeyondTheLimitWaitsWhileAllAreBusy(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 20, nil)
	busy := busyFrom(t, h, 20, netip.Addr{})
	c := h.dial(t)
	if _, err := c.Write(controlRaw("evt_control_busy")); err != nil {
		t.Fatal(err)
	}
	delayed := h.srv.metrics.http.delayed.WithLabelValues("main")
	waitUntil(t, "the listener to hold the connection, and log it", func() bool {
		return metricValue(t, delayed) >= 1 && strings.Contains(h.logs.String(), "connection limit reached")
	})
	if n := h.srv.budget.inflight.Load(); n != 20*4096 {
		t.Errorf("bodies in progress = %d bytes, want all 20 still read", n)
	}
	_ = busy[0].Close()
	if got := h.answer(t, c); got != "200" {
		t.Errorf("the held connection answered %s once a busy one ended, want 200", got)
	}
}

// With http.max_connections_per_address, an address at its limit pays with its own
// idle connection, or has its new one closed when all of its are busy; another
// address is served all the same.
func TestHostile_ConnectionsPerAddress(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 100, func(s *Server) { s.cfg.HTTP.MaxConnectionsPerAddress = 5 })
	one, two := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")
	idle := h.holdIdle(t, 5, one)
	if got := h.exchangeFrom(t, one, controlRaw("evt_control_addr_1")); got != "200" {
		t.Fatalf("a sixth connection from %s answered %s, want 200", one, got)
	}
	h.waitClosed(t, idle[0], "the address's connection idle the longest")
	if n := metricValue(t, h.srv.metrics.http.evicted.WithLabelValues("main", limitPerAddress)); n != 1 {
		t.Errorf("evictions for max_connections_per_address = %v, want 1", n)
	}
	for _, c := range idle {
		_ = c.Close()
	}
	open := h.srv.metrics.http.open.WithLabelValues("main")
	waitUntil(t, "the server to see every connection closed", func() bool { return metricValue(t, open) == 0 })
	busyFrom(t, h, 5, one)
	if got := h.exchangeFrom(t, one, controlRaw("evt_control_addr_2")); got != "closed" {
		t.Errorf("a sixth connection from %s with five busy answered %s, want closed", one, got)
	}
	if got := h.exchangeFrom(t, two, controlRaw("evt_control_addr_3")); got != "200" {
		t.Errorf("a connection from %s answered %s, want 200", two, got)
	}
}

// Above three quarters of http.max_connections, a connection that goes idle, or a
// new one that sends nothing, is closed after pressureIdleTimeout although the
// configured timeouts are an hour; one that went idle below stays open.
func TestHostile_NearTheLimitIdleTimeoutsShorten(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 20, nil)
	before := h.holdIdle(t, 1, netip.Addr{})[0]
	busyFrom(t, h, 15, netip.Addr{}) // 16 of 20 open: above three quarters
	idle := holdFrom(t, h, 1, netip.Addr{})[0]
	h.waitClosed(t, idle, "a connection idle above three quarters of the cap")
	silent := h.dial(t)
	h.waitClosed(t, silent, "a silent new connection above three quarters of the cap")
	if !isOpen(before) {
		t.Errorf("a connection that went idle below three quarters of the cap was closed")
	}
}

// Broken variant: the policy before eviction (close every connection beyond the cap)
// closes the newcomer while idle connections hold the cap.
func TestBrokenListenerClosingTheNewest_RefusesTheNewcomer(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 20, func(s *Server) { s.breakListener = func(c *listenerConfig) { c.closeNewest = true } })
	limitHeld(t, h)
	if got := h.exchange(t, controlRaw("evt_control_newest")); got != "closed" {
		t.Errorf("connection 21 answered %s with the old policy, want closed", got)
	}
}

// Broken variant: a listener that closes a newcomer when every connection has a
// request in progress, instead of holding it until one ends, refuses it.
func TestBrokenListenerRefusingWhenBusy_ClosesTheNewcomer(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 20, func(s *Server) { s.breakListener = func(c *listenerConfig) { c.refuseWhenBusy = true } })
	busyFrom(t, h, 20, netip.Addr{})
	if got := h.exchange(t, controlRaw("evt_control_refused")); got != "closed" {
		t.Errorf("connection 21 answered %s with newcomers refused when all are busy, want closed", got)
	}
}

// Broken variant: without the connection limit, a connection beyond it is served
// while every other has a request in progress.
func TestBrokenListenerWithoutLimit_ServesBeyondTheLimit(t *testing.T) {
	t.Parallel()
	h := limitServer(t, 20, func(s *Server) { s.cfg.HTTP.MaxConnections = 1 << 30 })
	busyFrom(t, h, 20, netip.Addr{})
	if got := h.exchange(t, controlRaw("evt_control_unlimited")); got != "200" {
		t.Errorf("connection 21 answered %s without the limit, want 200", got)
	}
}
