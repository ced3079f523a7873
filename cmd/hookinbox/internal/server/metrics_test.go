package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestMetrics_CountDeliveriesAndAttempts(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.Delivery(hookinbox.DeliveryInfo{Endpoint: "billing", Outcome: hookinbox.OutcomeProcessed, Status: 200, SecretIndex: 1, Latency: 3 * time.Millisecond})
	m.Delivery(hookinbox.DeliveryInfo{Endpoint: "billing", Outcome: hookinbox.OutcomeDuplicate, Status: 200, SecretIndex: 0})
	m.Delivery(hookinbox.DeliveryInfo{Endpoint: "billing", Status: 401, Reason: "unauthorized", SecretIndex: -1})
	m.Attempt(hookinbox.AttemptInfo{Endpoint: "queue", Result: hookinbox.AttemptFailed, NeedsReview: true, Latency: time.Second})
	m.Attempt(hookinbox.AttemptInfo{Endpoint: "queue", Result: hookinbox.AttemptProcessed})
	m.Group(hookinbox.GroupInfo{Kind: hookinbox.GroupAccept, Size: 7})
	m.Group(hookinbox.GroupInfo{Kind: hookinbox.GroupSync, Size: 3, Failed: true})

	body := scrape(t, m)
	for _, want := range []string{
		`hookinbox_deliveries_total{endpoint="billing",outcome="processed",status="200"} 1`,
		`hookinbox_deliveries_total{endpoint="billing",outcome="duplicate",status="200"} 1`,
		`hookinbox_deliveries_total{endpoint="billing",outcome="unauthorized",status="401"} 1`,
		`hookinbox_delivery_duration_seconds_count{endpoint="billing"} 3`,
		`hookinbox_secret_slot_total{endpoint="billing",slot="0"} 1`,
		`hookinbox_secret_slot_total{endpoint="billing",slot="1"} 1`,
		`hookinbox_attempts_total{endpoint="queue",result="failed"} 1`,
		`hookinbox_attempts_total{endpoint="queue",result="processed"} 1`,
		`hookinbox_processing_duration_seconds_count{endpoint="queue"} 2`,
		`hookinbox_attempts_exhausted_total{endpoint="queue"} 1`,
		`hookinbox_group_commit_size_sum{kind="accept"} 7`,
		`hookinbox_group_commit_size_bucket{kind="sync",le="4"} 1`,
		`hookinbox_group_commit_failures_total{kind="sync"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `slot="-1"`) {
		t.Errorf("an unverified delivery was counted under a secret slot")
	}
}

func TestMetrics_StatsAreReadAtScrapeAndCached(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	m := NewMetrics()
	m.CollectStats(func(context.Context) (*hookinbox.Stats, error) {
		reads.Add(1)
		return &hookinbox.Stats{
			Unprocessed: 3, OldestUnprocessedAge: 90 * time.Second, NeedsReview: 1,
			ReceivedLastHour: []hookinbox.TypeCount{{EventType: "invoice.paid", Count: 7}},
		}, nil
	}, time.Hour, time.Second, discardLogger())

	body := scrape(t, m)
	for _, want := range []string{
		"hookinbox_stats_up 1",
		"hookinbox_unprocessed 3",
		"hookinbox_oldest_unprocessed_age_seconds 90",
		"hookinbox_needs_review 1",
		`hookinbox_received_last_hour{event_type="invoice.paid"} 7`,
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

func TestMetrics_StatsFailureIsReportedNotFatal(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.CollectStats(func(context.Context) (*hookinbox.Stats, error) {
		return nil, errors.New("database unreachable")
	}, 0, time.Second, discardLogger())
	m.Delivery(hookinbox.DeliveryInfo{Endpoint: "billing", Outcome: hookinbox.OutcomeProcessed, Status: 200})

	body := scrape(t, m)
	if !strings.Contains(body, "hookinbox_stats_up 0") || strings.Contains(body, "hookinbox_unprocessed ") {
		t.Errorf("/metrics with failing stats:\n%s", body)
	}
	if !strings.Contains(body, `hookinbox_deliveries_total{endpoint="billing",outcome="processed",status="200"} 1`) {
		t.Errorf("counters are missing when stats fail")
	}
}
