//go:build linux

// Command flood measures what a flood from one client costs `hookinbox serve`, and
// whether a provider is still served meanwhile: it holds idle connections, or bodies
// that stall, against a running serve from loopback addresses (Linux's 127.0.0.0/8),
// reopening each one the server closes, and samples serve's RSS and open descriptors
// (/proc/PID) before and during the flood. With --events it posts signed Stripe
// events from 127.0.0.1, eight at a time, each on a new connection; run that as a
// second invocation beside the flood, so that the sender's goroutines are not
// scheduled among the flood's (a provider's request follows its handshake at once,
// which a sender delayed between connecting and writing does not):
//
//	hookinbox serve --config flood.yaml & pid=$!
//	go run ./internal/bench/flood --pid $pid --idle 10000 --hold 40s &
//	go run ./internal/bench/flood --pid $pid --events 200 --hold 0s
//
// The per-connection figure is the RSS the flood added, divided by the connections
// it added to serve's open descriptors. docs/OPERATIONS.md ("Floods") gives the
// figures and how they were measured.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/flood"
	"github.com/hookinbox/hookinbox/hookinboxtest"
)

func main() {
	var (
		target   = flag.String("target", "127.0.0.1:18080", "serve's listen address")
		pid      = flag.Int("pid", 0, "serve's process id, whose RSS and descriptors are sampled (required)")
		idle     = flag.Int("idle", 0, "connections that send nothing")
		slow     = flag.Int("slow", 0, "requests whose body stalls")
		path     = flag.String("path", "/webhooks/stripe", "the endpoint the slow bodies and the events are posted to")
		declared = flag.Int("declared", 1<<20, "the slow bodies' Content-Length")
		sent     = flag.Int("sent", 1_000_000, "bytes of each slow body sent before it stalls")
		from     = flag.Int("from", 2, "the flood dials from 127.0.0.FROM ...")
		to       = flag.Int("to", 101, "... to 127.0.0.TO")
		hold     = flag.Duration("hold", 30*time.Second, "how long the flood is held once it has opened its connections")
		events   = flag.Int("events", 0, "signed Stripe events posted from 127.0.0.1, eight at a time, each on a new connection")
		secret   = flag.String("secret", "whsec_flood", "the endpoint's Stripe signing secret")
	)
	flag.Parse()
	if *pid == 0 {
		log.Fatal("--pid is required")
	}
	base := sample(*pid)
	fmt.Printf("before: rss %.1f MiB, descriptors %d\n", mib(base.rss), base.fds)

	ctx, stop := context.WithCancel(context.Background())
	f := &flood.Flood{Target: *target, Sources: flood.Loopback(*from, *to)}
	f.Idle(ctx, *idle)
	f.SlowBodies(ctx, *slow, *path, *declared, *sent)
	if want := int64(*idle + *slow); want > 0 {
		start := time.Now()
		for f.Stats.Opened.Load() < want && time.Since(start) < 5*time.Minute {
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Printf("flood: %d connections opened in %s\n", f.Stats.Opened.Load(), time.Since(start).Round(time.Millisecond))
	}

	answers := map[string]int{}
	sender := make(chan struct{})
	go func() {
		defer close(sender)
		signer := hookinboxtest.Stripe(*secret)
		var mu sync.Mutex
		var wg sync.WaitGroup
		ids := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range ids {
					got := post(*target, *path, signer, i)
					mu.Lock()
					answers[got]++
					mu.Unlock()
				}
			})
		}
		for i := range *events {
			ids <- i
		}
		close(ids)
		wg.Wait()
	}()
	peak := base
	for deadline := time.Now().Add(*hold); time.Now().Before(deadline); {
		if s := sample(*pid); s.rss > peak.rss {
			peak = s
		}
		time.Sleep(250 * time.Millisecond)
	}
	<-sender
	last := sample(*pid)
	stop()
	f.Wait()

	conns := peak.fds - base.fds
	fmt.Printf("peak: rss %.1f MiB, descriptors %d (%d more than before)\n", mib(peak.rss), peak.fds, conns)
	fmt.Printf("end of the hold: rss %.1f MiB, descriptors %d\n", mib(last.rss), last.fds)
	if conns > 0 {
		fmt.Printf("per connection: %.1f KiB\n", float64(peak.rss-base.rss)/1024/float64(conns))
	}
	fmt.Printf("flood: opened %d, closed by the server %d, failed dials %d\n",
		f.Stats.Opened.Load(), f.Stats.Closed.Load(), f.Stats.DialErrors.Load())
	if *events > 0 {
		fmt.Printf("events: %v of %d\n", answers, *events)
	}
}

// proc is what /proc says of a process.
type proc struct {
	rss int64 // bytes
	fds int
}

func sample(pid int) proc {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	var p proc
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			p.rss = kb << 10
		}
	}
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	if err != nil {
		log.Fatal(err)
	}
	p.fds = len(fds)
	return p
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// post sends the i-th signed event on a new connection and returns the answer's
// status code, "closed" when the server closed the connection without one, or what
// failed.
func post(target, path string, signer hookinboxtest.Signer, i int) string {
	body, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("evt_flood_%d_%d", time.Now().UnixNano(), i), "type": "invoice.paid",
		"data": map[string]any{"object": map[string]any{"id": "in_flood", "object": "invoice"}}})
	h, err := signer.Sign(body, time.Now())
	if err != nil {
		return "sign failed"
	}
	c, err := net.DialTimeout("tcp", target, 30*time.Second)
	if err != nil {
		return "dial failed"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: flood\r\nContent-Type: application/json\r\nStripe-Signature: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		path, h.Get("Stripe-Signature"), len(body))
	req.Write(body)
	if _, err := c.Write(req.Bytes()); err != nil {
		return "closed"
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "no answer"
		}
		return "closed"
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}
