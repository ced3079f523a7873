package server

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/outbox"
)

func TestMetrics_CountOutboxDeliveriesAndDuplicates(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.OutboxDelivery("endpoint:gw", "delivered", 20*time.Millisecond)
	m.OutboxDelivery("endpoint:gw", "failed", time.Second)
	m.OutboxDelivery("default", "stale", time.Millisecond)
	m.OutboxDuplicate("endpoint:js")

	body := scrape(t, m)
	for _, want := range []string{
		`hookinbox_outbox_deliveries_total{result="delivered",sink="endpoint:gw"} 1`,
		`hookinbox_outbox_deliveries_total{result="failed",sink="endpoint:gw"} 1`,
		`hookinbox_outbox_deliveries_total{result="stale",sink="default"} 1`,
		`hookinbox_outbox_delivery_duration_seconds_count{sink="endpoint:gw"} 2`,
		`hookinbox_outbox_duplicates_total{sink="endpoint:js"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestMetrics_OutboxStatsAreReadAtScrape(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	m := NewMetrics()
	m.CollectOutboxStats(func(context.Context) (*outbox.Stats, error) {
		reads.Add(1)
		return &outbox.Stats{Pending: 4, OldestPendingAge: 30 * time.Second, NeedsReview: 2}, nil
	}, time.Hour, time.Second, discardLogger())

	body := scrape(t, m)
	for _, want := range []string{
		"hookinbox_outbox_stats_up 1",
		"hookinbox_outbox_pending 4",
		"hookinbox_outbox_oldest_pending_age_seconds 30",
		"hookinbox_outbox_needs_review 2",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	scrape(t, m)
	if n := reads.Load(); n != 1 {
		t.Errorf("two scrapes within the cache period read the stats %d times, want 1", n)
	}
}

// countingObserver records what the wrapper passes on.
type countingObserver struct{ deliveries, attempts atomic.Int32 }

func (o *countingObserver) Delivery(hookinbox.DeliveryInfo) { o.deliveries.Add(1) }
func (o *countingObserver) Attempt(hookinbox.AttemptInfo)   { o.attempts.Add(1) }

func TestWakeDispatcher_WakesAfterCommittedOutboxWritesOnly(t *testing.T) {
	t.Parallel()
	inner := &countingObserver{}
	var wakes atomic.Int32
	w := &wakeDispatcher{Observer: inner, notify: func() { wakes.Add(1) }, endpoints: map[string]bool{"gw": true}}

	steps := []struct {
		name string
		call func()
		wake bool
	}{
		{"processed on a forward endpoint", func() { w.Delivery(hookinbox.DeliveryInfo{Endpoint: "gw", Outcome: hookinbox.OutcomeProcessed}) }, true},
		{"accepted: nothing written yet", func() { w.Delivery(hookinbox.DeliveryInfo{Endpoint: "gw", Outcome: hookinbox.OutcomeAccepted}) }, false},
		{"duplicate", func() { w.Delivery(hookinbox.DeliveryInfo{Endpoint: "gw", Outcome: hookinbox.OutcomeDuplicate}) }, false},
		{"refused", func() { w.Delivery(hookinbox.DeliveryInfo{Endpoint: "gw", Status: 401, Reason: "unauthorized"}) }, false},
		{"processed elsewhere", func() { w.Delivery(hookinbox.DeliveryInfo{Endpoint: "other", Outcome: hookinbox.OutcomeProcessed}) }, false},
		{"worker processed", func() { w.Attempt(hookinbox.AttemptInfo{Endpoint: "gw", Result: hookinbox.AttemptProcessed}) }, true},
		{"worker failed", func() { w.Attempt(hookinbox.AttemptInfo{Endpoint: "gw", Result: hookinbox.AttemptFailed}) }, false},
	}
	for _, s := range steps {
		before := wakes.Load()
		s.call()
		if woke := wakes.Load() > before; woke != s.wake {
			t.Errorf("%s: woke %v, want %v", s.name, woke, s.wake)
		}
	}
	if inner.deliveries.Load() != 5 || inner.attempts.Load() != 2 {
		t.Errorf("passed on %d deliveries and %d attempts, want 5 and 2", inner.deliveries.Load(), inner.attempts.Load())
	}
	// Without an observer of its own (operator commands have none).
	(&wakeDispatcher{notify: func() {}}).Delivery(hookinbox.DeliveryInfo{})
}

func parseConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("c.yaml", []byte(yaml), config.Options{ResolveSecrets: true, LookupEnv: func(k string) (string, bool) {
		if k == "S" {
			return "whsec_test", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const forwardEndpoint = `
endpoints:
  - {name: gw, path: /gw, provider: github, handler: forward, secrets_env: [S], forward: {url: "http://127.0.0.1:1/events"}}
  - {name: billing, path: /b, provider: stripe, handler: billing, secrets_env: [S]}
`

// The library takes a single sink as the default sink; billing's messages must not
// go to a forward endpoint's receiver that way.
func TestOpenSinks_ASingleForwardSinkIsNotTheDefault(t *testing.T) {
	t.Parallel()
	s, err := openSinks(parseConfig(t, forwardEndpoint), nil, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	if s.defaultSink != "" || s.byName["endpoint:gw"] == nil || len(s.byName) != 1 || s.nc != nil {
		t.Errorf("sinks = %+v, want endpoint:gw alone, no default, no NATS", s)
	}

	s, err = openSinks(parseConfig(t, forwardEndpoint+"outbox: {sink: {url: 'http://127.0.0.1:1/billing'}}\n"), nil, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	if s.defaultSink != DefaultSinkName || s.byName[DefaultSinkName] == nil || len(s.byName) != 2 {
		t.Errorf("sinks with outbox.sink = %+v", s)
	}
}

// serve starts while NATS is down; /readyz says so without failing.
func TestOpen_DispatchesWhileNATSIsUnreachable(t *testing.T) {
	t.Parallel()
	cfg := parseConfig(t, "nats_url: nats://127.0.0.1:1\n"+`
endpoints:
  - {name: js, path: /js, provider: stripe, handler: forward, secrets_env: [S], forward: {nats_subject: hooks.stripe}}
`)
	b, err := Open(context.Background(), unreachablePostgres, cfg, OpenOptions{Logger: discardLogger(), Dispatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Dispatching() {
		t.Errorf("not dispatching with a forward endpoint")
	}
	if state, ok := b.NATSState(); !ok || state != "disconnected" {
		t.Errorf("NATS state = %q, %v; want disconnected", state, ok)
	}
	code, body := readyz(t, b)
	if code != 503 || body["nats"] != "disconnected" || body["error"] != "database unreachable" {
		t.Errorf("/readyz = %d %v", code, body)
	}
}

func TestOpen_WithoutDispatchHasNoSinks(t *testing.T) {
	t.Parallel()
	b, err := Open(context.Background(), unreachablePostgres, parseConfig(t, forwardEndpoint), OpenOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.NATSState(); b.Dispatching() || ok || b.Outbox == nil {
		t.Errorf("an operator backend dispatches, or has no dispatcher for its operator functions")
	}
}

// unreachablePostgres is a PostgreSQL nobody answers on.
var unreachablePostgres = config.Database{Driver: config.DriverPostgres, URL: "postgres://127.0.0.1:1/unused"}
