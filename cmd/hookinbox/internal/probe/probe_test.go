package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// answeringReceiver answers every delivery with status and body, and its applied
// counts, none, on /applied: a receiver that never applies anything. It counts the
// deliveries.
func answeringReceiver(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/applied" {
			_, _ = w.Write([]byte(`[]`))
			return
		}
		n.Add(1)
		http.Error(w, body, status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRun_ProviderGivesUpOnAFailingReceiver(t *testing.T) {
	t.Parallel()
	srv, n := answeringReceiver(t, http.StatusInternalServerError, `{"error":"database down"}`)
	report, err := Run(context.Background(), &Config{
		Target: srv.URL + "/webhooks", Provider: "linear", Signer: hookinboxtest.Linear("secret"),
		Check: &URLCheck{URL: srv.URL + "/applied", Client: srv.Client()}, Facts: 2,
		Scenarios: []string{Baseline}, TimeScale: 1e6, Settle: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := report.Scenarios[0]
	// Linear's facts have two events, each sent once and retried three times.
	if s.Undelivered != 2 || s.GaveUp != 4 || s.Attempts != 16 || n.Load() != 16 || s.Answers["500"] != 16 {
		t.Fatalf("undelivered %d, gave up %d, attempts %d (received %d), answers %v; want 2, 4, 16, 16, 500×16",
			s.Undelivered, s.GaveUp, s.Attempts, n.Load(), s.Answers)
	}
	if !report.Failed() || s.Verdict() != "FAIL" || s.Failures[0].Problem != "undelivered" {
		t.Fatalf("failed %v, verdict %s, failures %+v", report.Failed(), s.Verdict(), s.Failures)
	}
}

func TestRun_InterruptedReportsDeliveriesStillRetrying(t *testing.T) {
	t.Parallel()
	srv, n := answeringReceiver(t, http.StatusInternalServerError, `{"error":"database down"}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var report *Report
	var err error
	go func() {
		defer close(done)
		report, err = Run(ctx, &Config{
			Target: srv.URL + "/webhooks", Provider: "stripe", Signer: hookinboxtest.Stripe("whsec_x"),
			Check: &URLCheck{URL: srv.URL + "/applied", Client: srv.Client()}, Facts: 1,
			Scenarios: []string{Baseline}, TimeScale: 1, Settle: -1,
		})
	}()
	// Stripe's first retry is a minute away: the run waits, with 3 deliveries
	// sent once each.
	for n.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	s := report.Scenarios[0]
	if !report.Interrupted || s.StillRetrying != 3 || s.Undelivered != 1 {
		t.Fatalf("interrupted %v, still retrying %d, undelivered %d; want true, 3, 1", report.Interrupted, s.StillRetrying, s.Undelivered)
	}
}

func TestRun_RefusedEverywhereStopsEarly(t *testing.T) {
	t.Parallel()
	srv, n := answeringReceiver(t, http.StatusNotFound, "not found")
	_, err := Run(context.Background(), &Config{
		Target: srv.URL + "/wrong", Provider: "stripe", Signer: hookinboxtest.Stripe("whsec_x"),
		Check: &URLCheck{URL: srv.URL + "/applied", Client: srv.Client()}, Facts: 5, TimeScale: 1,
	})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "every delivery was answered 404 Not Found") {
		t.Fatalf("err = %v, want an InputError about 404", err)
	}
	// The first fact's three events, once each: no retry, no other fact.
	if n.Load() != 3 {
		t.Fatalf("%d deliveries, want 3", n.Load())
	}
}

// TestReport_JSONAndJUnit checks the documents' shape on a report with a failure.
func TestReport_JSONAndJUnit(t *testing.T) {
	t.Parallel()
	f := &Fact{ID: "in_1", Scenario: Duplicates}
	e := &Event{Fact: f, ID: "evt_1", Type: "invoice.paid", Role: RoleOutcome}
	f.Events = []*Event{e}
	for c := 1; c <= 2; c++ {
		d := newDelivery(e, c)
		d.record(Attempt{Status: 200, Took: time.Millisecond, Answer: `{"outcome":"processed"}`})
		d.set(acked)
	}
	s := scenarioReport(Duplicates, []*Fact{f}, map[string]int64{"in_1": 2})
	r := &Report{Target: "http://x", Provider: "stripe", Scenarios: []*ScenarioReport{s}, Doubled: s.Doubled}

	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Lost, Doubled int
		Passed        bool
		Scenarios     []struct {
			Name, Verdict string
			Failures      []struct {
				FactID     string `json:"fact_id"`
				Deliveries []struct{ Attempts []struct{ Outcome string } }
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Doubled != 1 || doc.Passed || doc.Scenarios[0].Verdict != "FAIL" || doc.Scenarios[0].Failures[0].FactID != "in_1" ||
		len(doc.Scenarios[0].Failures[0].Deliveries) != 2 || doc.Scenarios[0].Failures[0].Deliveries[1].Attempts[0].Outcome != "200" {
		t.Fatalf("--json:\n%s", b.String())
	}

	b.Reset()
	if err := r.WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuites name="hookinbox probe" tests="1" failures="1"`, `name="duplicates"`, `<failure message="1 doubled" type="doubled">`, "in_1 doubled: applied 2 times"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("--junit lacks %q:\n%s", want, b.String())
		}
	}

	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"duplicates  1      2           2         200×2", "in_1 doubled: applied 2 times", "0 lost, 1 doubled, 0 undelivered"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
