package effect_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/effect"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// recorderOfItsOwn returns a recorder on a pool of its own, and end, which closes that
// pool and waits until every session it opened has left the server.
//
// A statement that timed out on the client may still be waiting on the server: pgx
// gives up at once and asks the server to cancel it in the background. Until that
// lands, it would apply once the test releases its lock (correctly: it is fenced by
// the token). end cancels any statement of the pool still waiting on a lock, so that
// what the test sees next is the other case, the record lost, as in a partition.
func recorderOfItsOwn(t *testing.T, db *testdb.DB, cfg effect.Config) (*effect.Recorder, func()) {
	t.Helper()
	var mu sync.Mutex
	var pids []uint32
	pcfg := db.Config(t)
	pcfg.MaxConns = 2
	pcfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		mu.Lock()
		pids = append(pids, c.PgConn().PID())
		mu.Unlock()
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // a no-op after end
	end := func() {
		t.Helper()
		pool.Close()
		mu.Lock()
		opened := append([]uint32(nil), pids...)
		mu.Unlock()
		testdb.EndSessions(t, db.Pool, opened)
	}
	return effect.New(pgxdriver.New(pool).Executor(), &cfg), end
}

// scenarioRecordBlocked: fn is running when the caller's context is cancelled, and the
// test locks the effect's row before fn returns (fnErr nil: the call succeeded, else
// failed), so recording the result (or releasing the key) waits on the lock. Do must
// return anyway, within a generous 30 s (a bound for a hang, not a speed requirement).
// The key is left pending under the first caller's lease; once the lease has ended, a
// later Do calls fn again with the same key and records its result — the documented
// seam, which the provider's idempotency key covers.
func scenarioRecordBlocked(t *testing.T, fnErr error) (result []byte, err error) {
	db, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const key = "webhook:evt_1:refund"
	lock, lerr := db.Pool.Begin(context.Background())
	if lerr != nil {
		t.Fatal(lerr)
	}
	defer lock.Rollback(context.Background()) //nolint:errcheck // rolled back below
	var calls atomic.Int32
	var keys sync.Map
	fn := func(_ context.Context, k string) ([]byte, error) {
		keys.Store(k, true)
		if calls.Add(1) > 1 {
			return []byte("re_2"), nil
		}
		if _, err := lock.Exec(context.Background(), `SELECT 1 FROM hookinbox_effect WHERE key = $1 FOR UPDATE`, k); err != nil {
			t.Error(err)
		}
		cancel() // the caller stops during the call
		return []byte("re_1"), fnErr
	}
	rec, end := recorderOfItsOwn(t, db, effect.Config{RecordTimeout: 200 * time.Millisecond})
	type answer struct {
		result []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := rec.Do(ctx, key, fn)
		done <- answer{r, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Do did not return within 30 s while recording waited on a lock")
	}

	end()
	if err := lock.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	var state string
	if err := db.Pool.QueryRow(context.Background(), `SELECT state FROM hookinbox_effect WHERE key = $1`, key).Scan(&state); err != nil || state != "pending" {
		t.Fatalf("the key after the blocked record: state %q (%v), want pending", state, err)
	}
	if _, err := db.Pool.Exec(context.Background(), `UPDATE hookinbox_effect SET lease_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	later := effect.New(pgxdriver.New(db.Pool).Executor(), nil)
	for range 2 {
		if got, err := later.Do(context.Background(), key, fn); err != nil || string(got) != "re_2" {
			t.Fatalf("a later Do: %q, %v; want re_2", got, err)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("fn called %d times, want 2 (once more after the unrecorded call, then recorded)", calls.Load())
	}
	n := 0
	keys.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("fn received %d different keys, want the same one every time", n)
	}
	return a.result, a.err
}

func TestDo_CompleteBlockedReturnsNotRecorded(t *testing.T) {
	t.Parallel()
	result, err := scenarioRecordBlocked(t, nil)
	if !errors.Is(err, effect.ErrNotRecorded) || string(result) != "re_1" {
		t.Fatalf("Do: %q, %v; want re_1 with ErrNotRecorded", result, err)
	}
}

func TestDo_ReleaseBlockedReturnsTheCallsError(t *testing.T) {
	t.Parallel()
	boom := errors.New("provider answered 500")
	result, err := scenarioRecordBlocked(t, boom)
	if !errors.Is(err, boom) || errors.Is(err, effect.ErrNotRecorded) || result != nil {
		t.Fatalf("Do: %q, %v; want no result and the call's error", result, err)
	}
}
