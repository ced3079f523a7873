package hookinbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/internal/testwait"
)

// The cross-process wake latency, a measurement rather than a test (docs/BENCHMARKS.md):
//
//	HOOKINBOX_WAKE_BENCH=200 go test -run TestWakeLatency -v .
//
// Workers run in a child process (this test binary again), idle; this process
// accepts one async receipt at a time and notes when Receive returned (the receipt is
// committed); the child's handler notes when it starts. Both clocks are the machine's.
// Each mode (LISTEN/NOTIFY, and polling alone with the default 1 s poll) takes the
// given number of receipts, one after another, each once the previous one is done
// and a random pause has left the workers idle.
func TestWakeLatency(t *testing.T) {
	if os.Getenv("HOOKINBOX_WAKE_CHILD") != "" {
		wakeLatencyWorkers(t)
		return
	}
	n, _ := strconv.Atoi(os.Getenv("HOOKINBOX_WAKE_BENCH"))
	if n == 0 {
		t.Skip("a measurement: HOOKINBOX_WAKE_BENCH=N go test -run TestWakeLatency -v .")
	}
	for _, mode := range []struct {
		name     string
		pollOnly bool
		n        int
	}{{"listen/notify", false, n}, {"polling (1 s)", true, max(n/5, 20)}} {
		b := setup(t, setupOpts{noBilling: true, pollOnly: mode.pollOnly})
		ctx := b.ctx
		if _, err := b.db.Pool.Exec(ctx, `CREATE TABLE wake_started (event_id text PRIMARY KEY, started_ns bigint NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		b.inbox.Handle(epAsync, "invoice.created", countingHandler)
		child := exec.Command(os.Args[0], "-test.run=^TestWakeLatency$")
		child.Env = append(os.Environ(), "HOOKINBOX_WAKE_CHILD="+b.db.Schema, "HOOKINBOX_WAKE_ROLE="+b.db.Role,
			"HOOKINBOX_WAKE_POLL_ONLY="+strconv.FormatBool(mode.pollOnly))
		child.Stdout, child.Stderr = os.Stderr, os.Stderr
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		// The child claims the warm-up receipt once its workers (and listener) run.
		committed := map[string]int64{}
		receive := func(id string) {
			if out, err := b.inbox.Receive(ctx, invoiceEvent(epAsync, id, "invoice.created", "in_"+id, 0)); err != nil || out != hookinbox.OutcomeAccepted {
				t.Fatalf("receive %s: %s, %v", id, out, err)
			}
			committed[id] = time.Now().UnixNano()
		}
		started := func(id string) bool {
			return b.count(t, `SELECT count(*) FROM wake_started WHERE event_id = $1`, id) == 1
		}
		receive("warmup")
		testwait.Until(t, 30*time.Second, "the child's workers to start", func() bool { return started("warmup") })
		var lat []time.Duration
		for i := range mode.n {
			// Idle workers: past a random part of a poll, so that polling is measured
			// at every phase of its timer.
			time.Sleep(time.Duration(50+i*997%400) * time.Millisecond)
			id := fmt.Sprintf("evt_%d", i)
			receive(id)
			testwait.Until(t, 30*time.Second, "the child's worker to start "+id, func() bool { return started(id) })
			var ns int64
			if err := b.db.Pool.QueryRow(ctx, `SELECT started_ns FROM wake_started WHERE event_id = $1`, id).Scan(&ns); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, time.Duration(ns-committed[id]))
		}
		_ = child.Process.Kill()
		_ = child.Wait()
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		t.Logf("wake %-14s n=%d  p50 %7.2f ms  p90 %7.2f ms  p99 %7.2f ms  max %7.2f ms", mode.name, len(lat),
			ms(q(0.50)), ms(q(0.90)), ms(q(0.99)), ms(lat[len(lat)-1]))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// wakeLatencyWorkers is the child: workers on the parent's schema, each noting when
// its handler starts.
func wakeLatencyWorkers(t *testing.T) {
	db := &testdb.DB{Schema: os.Getenv("HOOKINBOX_WAKE_CHILD"), Role: os.Getenv("HOOKINBOX_WAKE_ROLE")}
	cfg := db.Config(t)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pollOnly, _ := strconv.ParseBool(os.Getenv("HOOKINBOX_WAKE_POLL_ONLY"))
	// The library's default poll (1 s): what polling alone costs.
	inbox := newTestInbox(t, pool, setupOpts{noBilling: true, pollOnly: pollOnly, worker: hookinbox.WorkerConfig{PollInterval: time.Second}})
	inbox.Handle(epAsync, "invoice.created", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO wake_started (event_id, started_ns) VALUES ($1, $2)`, ev.ID, time.Now().UnixNano())
		return err
	})
	_ = inbox.Run(context.Background()) // until the parent kills this process
}
