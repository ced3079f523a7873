//go:build failover

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/chaos"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// The failover test runs the binary against a primary with a streaming standby, holds
// the standby's WAL receiver back under load, kills the primary, promotes the
// standby, and checks what the providers were told. scripts/failover.sh builds the
// servers and runs it (go test -tags failover); it needs:
//
//	HOOKINBOX_FAILOVER_URL          the multi-host URL serve uses (host=primary,standby,
//	                                target_session_attrs=read-write)
//	HOOKINBOX_FAILOVER_PRIMARY_URL  the primary alone, for its pg_stat_replication
//	HOOKINBOX_FAILOVER_STANDBY_URL  the standby alone: the new primary after promotion
//	HOOKINBOX_FAILOVER_HOLD         a shell command that stops the standby's WAL
//	                                receiver (SIGSTOP): nothing more reaches the standby
//	HOOKINBOX_FAILOVER_DROP         a shell command that kills it (SIGKILL), so that
//	                                what the kernel still buffered for it is gone too
//	HOOKINBOX_FAILOVER_STOP         a shell command that stops the primary in immediate mode
//	HOOKINBOX_FAILOVER_PROMOTE      a shell command that promotes the standby
//	HOOKINBOX_FAILOVER_SYNC         1 when the standby must be synchronous (checked in
//	                                pg_stat_replication before the stop): then no event
//	                                answered 2xx may be missing on the new primary; 0
//	                                when it must be asynchronous, the broken variant,
//	                                where the primary acknowledges while the standby is
//	                                held back and the lost are counted
//	HOOKINBOX_FAILOVER_REPORT       optional: where to write the figures as JSON
//	HOOKINBOX_FAILOVER_SENDERS      optional: concurrent senders (default 6)

const failoverConfig = `
database_url: %s
listen: 127.0.0.1:0
endpoints:
  - {name: billing, path: /webhooks/stripe, provider: stripe, secrets_env: [E2E_STRIPE_SECRET], mode: sync, handler: billing}
  - {name: queue, path: /webhooks/queue, provider: stripe, secrets_env: [E2E_STRIPE_SECRET], mode: async, handler: billing}
worker: {concurrency: 2, poll_interval: 100ms, lease: 10s, statement_timeout: 5s}
shutdown_timeout: 10s
`

// failoverRequest is one delivery as the provider saw it.
type failoverRequest struct {
	endpoint, id string
	start, end   time.Time
	code         int // 0: no answer
}

// failoverReport is what the run measured.
type failoverReport struct {
	Sync                    bool    `json:"sync"`
	SyncState               string  `json:"sync_state_before_stop"`
	Requests                int     `json:"requests"`
	Acked                   int     `json:"acked_2xx"`
	AckedLost               int     `json:"acked_lost"`
	AppliedTwice            int     `json:"applied_twice"`
	AckedBeforeStop         int     `json:"acked_before_stop"`
	AckedWhileHeld          int     `json:"acked_while_standby_held"`
	Refused5xx              int     `json:"answered_5xx"`
	NoAnswer                int     `json:"no_answer"`
	AckedWithoutPrimary     int     `json:"acked_without_primary"`
	ReadyWithoutPrimary     int     `json:"readyz_200_without_primary"`
	NotReadyAfterStopMS     float64 `json:"readyz_503_after_stop_ms"`
	OutageMS                float64 `json:"stop_to_promote_ms"`
	PromoteToReadyMS        float64 `json:"promote_to_readyz_200_ms"`
	PromoteToFirstAckMS     float64 `json:"promote_to_first_2xx_ms"`
	PromoteToAsyncDrainedMS float64 `json:"promote_to_queue_drained_ms"`
}

func TestFailover_PromotedStandbyHasEveryAcknowledgedEvent(t *testing.T) {
	multiURL, primaryURL, standbyURL := os.Getenv("HOOKINBOX_FAILOVER_URL"), os.Getenv("HOOKINBOX_FAILOVER_PRIMARY_URL"), os.Getenv("HOOKINBOX_FAILOVER_STANDBY_URL")
	stopCmd, promoteCmd := os.Getenv("HOOKINBOX_FAILOVER_STOP"), os.Getenv("HOOKINBOX_FAILOVER_PROMOTE")
	holdCmd, dropCmd := os.Getenv("HOOKINBOX_FAILOVER_HOLD"), os.Getenv("HOOKINBOX_FAILOVER_DROP")
	if multiURL == "" || primaryURL == "" || standbyURL == "" || stopCmd == "" || promoteCmd == "" || holdCmd == "" || dropCmd == "" {
		t.Skip("run by scripts/failover.sh, which builds a primary and a standby")
	}
	rep := failoverReport{Sync: os.Getenv("HOOKINBOX_FAILOVER_SYNC") == "1"}
	env := childEnv("E2E_STRIPE_SECRET=" + e2eSecret)
	cfgPath := filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, failoverConfig, multiURL), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, env, "migrate", "--config", cfgPath)
	// The audit triggers count every committed application and every commit that
	// marks a receipt processed; they replicate with what they count.
	primary, err := pgx.Connect(context.Background(), primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close(context.Background())
	if err := chaos.Audit(context.Background(), primary); err != nil {
		t.Fatal(err)
	}
	receivers := startServe(t, env, "--config", cfgPath, "--role", "receivers")
	workers := startServe(t, env, "--config", cfgPath, "--role", "workers")
	for _, p := range []*serveProc{receivers, workers} {
		testwait.Until(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := get(p.url("/readyz")); return code == 200 })
	}

	// /readyz, sampled all along.
	type sample struct {
		start time.Time
		code  int
	}
	var (
		mu      sync.Mutex
		samples []sample
		reqs    []failoverRequest
		acked   atomic.Int64
	)
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			s := sample{start: time.Now()}
			s.code, _ = get(receivers.url("/readyz"))
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	})
	// The load: distinct events, alternately to the sync and the async endpoint.
	client := &http.Client{Timeout: 20 * time.Second}
	signer := hookinboxtest.Stripe(e2eSecret)
	var next atomic.Int64
	senders, _ := strconv.Atoi(os.Getenv("HOOKINBOX_FAILOVER_SENDERS"))
	for w := range max(senders, 6) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1)
				r := failoverRequest{endpoint: "billing", id: fmt.Sprintf("evt_fo_%06d", i), start: time.Now()}
				path := "/webhooks/stripe"
				if w%2 == 1 {
					r.endpoint, path = "queue", "/webhooks/queue"
				}
				body := fmt.Appendf(nil, `{"id":%q,"type":"invoice.paid","data":{"object":{"id":"in_fo_%06d","customer":"cus_fo","amount_paid":100,"currency":"eur"}}}`, r.id, i)
				req, err := hookinboxtest.NewRequest(receivers.url(path), signer, body)
				if err != nil {
					t.Error(err)
					return
				}
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
					r.code = resp.StatusCode
				}
				r.end = time.Now()
				if r.code/100 == 2 {
					acked.Add(1)
				}
				mu.Lock()
				reqs = append(reqs, r)
				mu.Unlock()
				if r.code/100 != 2 {
					time.Sleep(10 * time.Millisecond) // a retrying provider backs off
				}
			}
		})
	}
	testwait.Until(t, 30*time.Second, "200 events answered 2xx before the failover", func() bool { return acked.Load() >= 200 })

	run := func(name, cmd string) time.Time {
		t.Helper()
		out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%s (%s): %v\n%s", name, cmd, err, out)
		}
		return time.Now()
	}
	// The replication the run claims, seen from the primary before the fault.
	if err := primary.QueryRow(context.Background(), `SELECT coalesce(string_agg(sync_state, ','), 'none') FROM pg_stat_replication`).Scan(&rep.SyncState); err != nil {
		t.Fatal(err)
	}
	if want := map[bool]string{true: "sync", false: "async"}[rep.Sync]; rep.SyncState != want {
		t.Fatalf("pg_stat_replication.sync_state = %q before the stop, want %q", rep.SyncState, want)
	}
	// The standby's WAL receiver held back while the load goes on: a synchronous
	// primary cannot acknowledge a commit now, an asynchronous one goes on. The hold
	// lasts until 100 more events were answered 2xx, or 3 s (a synchronous primary
	// answers none).
	run("holding the standby's WAL receiver", holdCmd)
	heldAt := acked.Load()
	holdDeadline := time.Now().Add(3 * time.Second)
	for acked.Load() < heldAt+100 && time.Now().Before(holdDeadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rep.AckedBeforeStop = int(acked.Load())
	rep.AckedWhileHeld = int(acked.Load() - heldAt)
	stopped := run("stopping the primary", stopCmd)
	run("killing the standby's WAL receiver", dropCmd)
	testwait.Until(t, 30*time.Second, "/readyz to answer 503 without a primary", func() bool { code, _ := get(receivers.url("/readyz")); return code == 503 })
	rep.NotReadyAfterStopMS = ms(time.Since(stopped))
	// The outage an operator (or Patroni) takes to decide on the promotion: long enough
	// for the receivers to answer many deliveries without a primary.
	time.Sleep(3 * time.Second)
	promoteStart := time.Now()
	promoted := run("promoting the standby", promoteCmd)
	rep.OutageMS = ms(promoteStart.Sub(stopped))
	testwait.Until(t, 30*time.Second, "/readyz to answer 200 on the new primary", func() bool { code, _ := get(receivers.url("/readyz")); return code == 200 })
	rep.PromoteToReadyMS = ms(time.Since(promoted))
	after := acked.Load()
	testwait.Until(t, 30*time.Second, "100 more events answered 2xx by the same receivers", func() bool { return acked.Load() >= after+100 })
	stopLoad()
	wg.Wait()

	// On the new primary: every event answered 2xx, once, and the workers (never
	// restarted) drain the queue. A batch claimed before the stop whose processing did
	// not commit waits for its lease (10 s here, 2 minutes by default).
	conn, err := pgx.Connect(context.Background(), standbyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	testwait.Until(t, 30*time.Second, "the workers to process every accepted receipt on the new primary", func() bool {
		var left int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM hookinbox_inbox WHERE state <> 'processed'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0
	})
	rep.PromoteToAsyncDrainedMS = ms(time.Since(promoted))
	countBy := func(query string) map[string]int {
		m := map[string]int{}
		rows, err := conn.Query(context.Background(), query)
		if err != nil {
			t.Fatal(err)
		}
		var key string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&key, &n}, func() error { m[key] = n; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	stored := countBy(`SELECT endpoint || '/' || event_id, count(*) FROM hookinbox_inbox WHERE state = 'processed' GROUP BY 1`)
	marked := countBy(`SELECT endpoint || '/' || event_id, count(*) FROM chaos_processed GROUP BY 1`)
	applied := countBy(`SELECT invoice_id, count(*) FROM chaos_applied WHERE status = 'paid' GROUP BY 1`)
	for invoice, n := range applied {
		if n > 1 {
			rep.AppliedTwice++
			t.Errorf("%s applied by %d commits", invoice, n)
		}
	}
	for key, n := range marked {
		if n > 1 {
			rep.AppliedTwice++
			t.Errorf("%s marked processed by %d commits", key, n)
		}
	}

	sort.Slice(reqs, func(i, j int) bool { return reqs[i].start.Before(reqs[j].start) })
	var firstAck time.Time
	var lost []string
	for _, r := range reqs {
		rep.Requests++
		switch {
		case r.code == 0:
			rep.NoAnswer++
		case r.code/100 == 5:
			rep.Refused5xx++
		}
		if r.code/100 != 2 {
			continue
		}
		rep.Acked++
		key := r.endpoint + "/" + r.id
		// Missing anywhere: the receipt, its processing, or the application it made.
		if stored[key] == 0 || marked[key] == 0 || applied["in_"+strings.TrimPrefix(r.id, "evt_")] == 0 {
			lost = append(lost, key)
		}
		// Sent after the primary was gone and answered before the standby was
		// promoted: nothing could have committed it.
		if r.start.After(stopped) && r.end.Before(promoteStart) {
			rep.AckedWithoutPrimary++
		}
		if r.start.After(promoted) && (firstAck.IsZero() || r.end.Before(firstAck)) {
			firstAck = r.end
		}
	}
	rep.AckedLost = len(lost)
	if !firstAck.IsZero() {
		rep.PromoteToFirstAckMS = ms(firstAck.Sub(promoted))
	}
	for _, s := range samples {
		if s.start.After(stopped) && s.start.Before(promoteStart) && s.code == 200 {
			rep.ReadyWithoutPrimary++
		}
	}

	out, _ := json.Marshal(rep)
	t.Logf("failover: %s", out)
	if p := os.Getenv("HOOKINBOX_FAILOVER_REPORT"); p != "" {
		if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep.AckedWithoutPrimary != 0 {
		t.Errorf("%d events answered 2xx while no primary answered", rep.AckedWithoutPrimary)
	}
	if rep.ReadyWithoutPrimary != 0 {
		t.Errorf("/readyz answered 200 %d times while no primary answered", rep.ReadyWithoutPrimary)
	}
	if rep.Refused5xx == 0 {
		t.Error("no delivery was answered 5xx during the outage: the test did not exercise it")
	}
	if rep.Sync && len(lost) > 0 {
		t.Errorf("synchronous standby: %d events answered 2xx are missing on the new primary: %v", len(lost), lost[:min(len(lost), 10)])
	}
}

// ms is d in milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
