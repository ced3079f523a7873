//go:build linux

// Linux only: the clients dial from 127.0.0.2 and above, which Linux's loopback
// holds and other systems' do not without configuration.

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/flood"
)

// Floods from one client against the real server on PostgreSQL, scaled down from
// what docs/OPERATIONS.md ("Floods") measures so that a run takes seconds: a cap of
// 150 connections instead of 4,096 and a body budget of 8 MiB instead of 64 MiB,
// against 200 idle connections from 127.0.0.102 and 200 from 127.0.0.2–127.0.0.101
// (each reopened whenever the server closes it), 24 bodies from 127.0.0.102
// declaring 1 MiB that stall after 1,000,000 bytes, and 8 clients there that
// pipeline 100 scrapes of /metrics and never read an answer; the flood runs in a
// process of its own (runFloodProcess). Meanwhile a sender at 127.0.0.1 posts
// signed Stripe events, each on a new connection. The memory bound is checked on the
// bytes the server accounts for bodies in flight (its budget's peak), not on RSS:
// the test's process holds the race detector, the sender and the other tests'
// servers too. The RSS of serve is measured in OPERATIONS.

const (
	// floodAddress is the last byte of the one-address flood's 127.0.0.x; the sender
	// is 127.0.0.1, a provider's address of its own.
	floodAddress        = 102
	floodMaxConnections = 150
	floodBudget         = 8 << 20
	floodEvents         = 200
	floodSenders        = 8
)

// floodYAML is hostileYAML with the flood's cap and budget.
var floodYAML = strings.Replace(fmt.Sprintf(hostileYAML, floodMaxConnections),
	"  max_connections:", fmt.Sprintf("  max_inflight_body_bytes: %d\n  max_connections:", floodBudget), 1)

// floodResult is what a flood run saw.
type floodResult struct {
	sent, ok int
	answers  map[string]int
	// peak is the most body bytes the server reserved at once.
	peak int64
}

// servedWithinBudget fails the test unless at least 99 % of the events were answered
// 200 and the bodies in memory stayed within the budget.
func (r floodResult) servedWithinBudget(t *testing.T) {
	t.Helper()
	if r.ok*100 < r.sent*99 {
		t.Errorf("%d of %d events answered 200 under the flood, want at least 99 %%: %v", r.ok, r.sent, r.answers)
	}
	if r.peak > floodBudget {
		t.Errorf("%d body bytes in memory at once, over the budget of %d", r.peak, floodBudget)
	}
}

// runFlood starts the flood against h, waits until the server holds its cap of
// connections and the large bodies' share of the budget, sends events signed
// deliveries to the control endpoint meanwhile (floodSenders at a time, each on a
// new connection), stops the flood and returns what was answered. It checks what
// holds in every variant: the flood wrote nothing, every 200 is a receipt and
// nothing else is, and the server serves after.
func runFlood(t *testing.T, h *hostileServer, spec floodSpec, events int) floodResult {
	t.Helper()
	spec.Target = h.addr
	helper := startFloodHelper(t, spec)
	defer helper.stop(t)
	open := h.srv.metrics.http.open.WithLabelValues("main")
	waitUntil(t, "the flood to hold the cap and the large bodies' share", func() bool {
		return metricValue(t, open) >= floodMaxConnections && h.srv.budget.inflight.Load() >= floodBudget/4*3
	})

	r := floodResult{sent: events, answers: runSender(t, h.addr, events)}
	r.ok = r.answers["200"]
	t.Logf("answers %v; flood: %s", r.answers, helper.stop(t))

	r.peak = h.srv.budget.peak.Load()
	t.Logf("body bytes reserved at most %d of %d; connections evicted %v, delayed %v, refused %v; bodies refused %v",
		r.peak, floodBudget,
		metricValue(t, h.srv.metrics.http.evicted.WithLabelValues("main", limitConnections)),
		metricValue(t, h.srv.metrics.http.delayed.WithLabelValues("main")),
		metricValue(t, h.srv.metrics.http.refused.WithLabelValues("main", limitConnections)),
		metricValue(t, h.srv.metrics.http.bodyRefused))
	if n := h.rows(t); n != 0 {
		t.Errorf("the flood wrote %d rows", n)
	}
	var receipts int
	if err := h.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM hookinbox_inbox WHERE endpoint = 'control' AND event_id LIKE 'evt_flood_%'`).Scan(&receipts); err != nil {
		t.Fatal(err)
	}
	if receipts != r.ok {
		t.Errorf("%d events received, %d answered 200", receipts, r.ok)
	}
	h.control(t)
	return r
}

// floodSpec is what the flood's process runs, from 127.0.0.102 unless it says.
type floodSpec struct {
	Target string
	// Idle connections from 127.0.0.102, and from 127.0.0.2–127.0.0.101.
	IdleOne, IdleMany int
	// Slow bodies declaring Declared bytes, of which Sent are sent.
	Slow, Declared, Sent int
	// NeverRead clients pipelining 100 scrapes of /metrics.
	NeverRead int
}

// mixedFlood is every kind at once: the idle connections outnumber the cap.
var mixedFlood = floodSpec{IdleOne: 200, IdleMany: 200, Slow: 24, Declared: 1 << 20, Sent: 1_000_000, NeverRead: 8}

// slowFlood is slow bodies alone, twice as many as the cap: every connection of
// theirs sends a request at once.
var slowFlood = floodSpec{Slow: 2 * floodMaxConnections, Declared: 128 << 10, Sent: 100_000}

// The flood and the sender run in processes of their own, the test binary started
// again with one of these variables set (to the flood's floodSpec in JSON, or the
// sender's target and count). From a provider's machine a request follows the
// handshake at once; a sender scheduled among the flood's goroutines, or the
// server's, may connect and wait a long while before it writes, which the server
// cannot tell from the flood's silence.
const (
	floodHelperEnv  = "HOOKINBOX_FLOOD"
	senderHelperEnv = "HOOKINBOX_FLOOD_SENDER"
)

// TestMain runs the flood or the sender when the test binary is started as one.
func TestMain(m *testing.M) {
	if spec := os.Getenv(floodHelperEnv); spec != "" {
		runFloodProcess(spec)
		return
	}
	if spec := os.Getenv(senderHelperEnv); spec != "" {
		runSenderProcess(spec)
		return
	}
	os.Exit(m.Run())
}

// runSender runs the sender's process: events signed deliveries to the control
// endpoint, floodSenders at a time, each on a new connection. It returns how many
// got each answer.
func runSender(t *testing.T, target string, events int) map[string]int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", senderHelperEnv, target, events))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the sender's process: %v: %s", err, out)
	}
	answers := map[string]int{}
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("the sender's answers %q: %v", out, err)
	}
	return answers
}

// runSenderProcess sends what spec ("TARGET COUNT") says and prints the answers'
// counts in JSON.
func runSenderProcess(spec string) {
	var target string
	var events int
	if _, err := fmt.Sscan(spec, &target, &events); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	answers := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ids := make(chan int)
	for range floodSenders {
		wg.Go(func() {
			for i := range ids {
				got := deliver(target, controlRaw(fmt.Sprintf("evt_flood_%d", i)))
				mu.Lock()
				answers[got]++
				mu.Unlock()
			}
		})
	}
	for i := range events {
		ids <- i
	}
	close(ids)
	wg.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(answers)
}

// runFloodProcess runs the flood spec says until its standard input closes, then
// prints what it did.
func runFloodProcess(spec string) {
	var fs floodSpec
	if err := json.Unmarshal([]byte(spec), &fs); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	one := &flood.Flood{Target: fs.Target, Sources: flood.Loopback(floodAddress, floodAddress)}
	many := &flood.Flood{Target: fs.Target, Sources: flood.Loopback(2, 101)}
	one.Idle(ctx, fs.IdleOne)
	many.Idle(ctx, fs.IdleMany)
	one.SlowBodies(ctx, fs.Slow, "/webhooks/stripe", fs.Declared, fs.Sent)
	one.NeverRead(ctx, fs.NeverRead, []byte("GET /metrics HTTP/1.1\r\nHost: flood\r\n\r\n"), 100)
	<-ctx.Done()
	one.Wait()
	many.Wait()
	fmt.Printf("127.0.0.102 opened %d (%d closed by the server), the hundred opened %d (%d closed), failed dials %d",
		one.Stats.Opened.Load(), one.Stats.Closed.Load(), many.Stats.Opened.Load(), many.Stats.Closed.Load(),
		one.Stats.DialErrors.Load()+many.Stats.DialErrors.Load())
}

// floodHelper is the flood's process.
type floodHelper struct {
	cmd   *exec.Cmd
	stdin io.Closer
	out   bytes.Buffer
	done  bool
}

func startFloodHelper(t *testing.T, spec floodSpec) *floodHelper {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := &floodHelper{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	f.cmd.Env = append(os.Environ(), floodHelperEnv+"="+string(js))
	f.cmd.Stdout, f.cmd.Stderr = &f.out, &f.out
	stdin, err := f.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	f.stdin = stdin
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return f
}

// stop ends the flood, once, and returns what it printed.
func (f *floodHelper) stop(t *testing.T) string {
	t.Helper()
	if !f.done {
		f.done = true
		_ = f.stdin.Close()
		if err := f.cmd.Wait(); err != nil {
			t.Errorf("the flood's process: %v: %s", err, f.out.String())
		}
	}
	return f.out.String()
}

// deliver sends raw on a new connection and returns the answer's status code,
// "closed" when the server closed the connection without one, or what failed.
func deliver(addr string, raw []byte) string {
	c, err := net.DialTimeout("tcp", addr, hostileGuard)
	if err != nil {
		return "dial failed"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(hostileGuard))
	if _, err := c.Write(raw); err != nil {
		return "closed"
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if isClosed(err) {
			return "closed"
		}
		return "no answer"
	}
	resp.Body.Close()
	return fmt.Sprint(resp.StatusCode)
}

// Under floods of idle connections from one address and from a hundred, slow bodies
// and clients that never read, at least 99 % of a sender's signed events are answered
// 200; the bodies in memory stay within the budget; the flood writes nothing; the
// server serves after, and says what it did (log line, metrics).
func TestFlood_SenderIsServedWithinTheBudget(t *testing.T) {
	// Not parallel: one flood at a time, before the package's parallel tests.
	h := startServerWith(t, floodYAML, nil)
	runFlood(t, h, mixedFlood, floodEvents).servedWithinBudget(t)
	if n := metricValue(t, h.srv.metrics.http.evicted.WithLabelValues("main", limitConnections)); n == 0 {
		t.Errorf("no eviction counted")
	}
	if !strings.Contains(h.logs.String(), "connection limit reached") {
		t.Errorf("the connection limit was not logged")
	}
}

// Broken variant: the listener's policy before eviction, which closes every
// connection beyond the cap, lets the idle flood hold the cap: the sender's
// connections are the ones closed.
func TestBrokenFloodClosingTheNewest_RefusesTheSender(t *testing.T) {
	// Not parallel: one flood at a time, before the package's parallel tests.
	h := startServerWith(t, floodYAML, func(s *Server) { s.breakListener = func(c *listenerConfig) { c.closeNewest = true } })
	if r := runFlood(t, h, mixedFlood, 20); r.ok*100 >= r.sent*99 {
		t.Errorf("%d of %d answered 200 with the old policy, want the sender refused", r.ok, r.sent)
	}
}

// Broken variant: without the body budget, the slow bodies are all held in memory,
// far over the budget.
func TestBrokenFloodWithoutBodyBudget_HoldsEveryBody(t *testing.T) {
	// Not parallel: one flood at a time, before the package's parallel tests.
	h := startServerWith(t, floodYAML, func(s *Server) { s.budget.unlimited = true })
	if r := runFlood(t, h, mixedFlood, 20); r.peak <= floodBudget {
		t.Errorf("%d body bytes at most without the budget, want over %d", r.peak, floodBudget)
	}
}

// Broken variant: a budget that large bodies may fill whole leaves the sender's
// small events waiting behind the slow bodies, and answered 503.
func TestBrokenFloodWithoutRoomForSmallBodies_RefusesTheSender(t *testing.T) {
	// Not parallel: one flood at a time, before the package's parallel tests.
	h := startServerWith(t, floodYAML, func(s *Server) { s.budget.large = semaphore.NewWeighted(floodBudget) })
	if r := runFlood(t, h, mixedFlood, 20); r.ok*100 >= r.sent*99 {
		t.Errorf("%d of %d answered 200 when large bodies may fill the budget, want the sender refused", r.ok, r.sent)
	}
}

// Slow bodies alone, twice as many as the cap: every connection of theirs sends a
// request at once. Those the budget admits hold their connections until
// read_timeout, those it refuses are answered 503 before their body is read; while
// they fill the cap, a newcomer waits for one to end instead of being refused
// (TestBrokenListenerRefusingWhenBusy_ClosesTheNewcomer), and at least 99 % of the
// sender's events are answered 200 within the budget.
func TestFlood_SlowBodiesBeyondTheCapLeaveRoomForTheSender(t *testing.T) {
	// Not parallel: one flood at a time, before the package's parallel tests.
	h := startServerWith(t, floodYAML, nil)
	runFlood(t, h, slowFlood, floodEvents).servedWithinBudget(t)
}
