package effect_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/effect"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

func setup(t *testing.T) (*testdb.DB, *effect.Recorder) {
	t.Helper()
	db := testdb.New(t)
	d := pgxdriver.New(db.Pool)
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, effect.New(d.Executor(), nil)
}

func TestDo_SameKeyTwiceCallsOnce(t *testing.T) {
	t.Parallel()
	_, rec := setup(t)
	ctx := context.Background()
	var calls atomic.Int32
	fn := func(ctx context.Context, key string) ([]byte, error) {
		calls.Add(1)
		return []byte("cus_123"), nil
	}
	key, err := effect.Key("evt_1", "update-customer-metadata")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := rec.Do(ctx, key, fn)
		if err != nil || string(got) != "cus_123" {
			t.Fatalf("Do: %q, %v", got, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("fn called %d times, want 1", calls.Load())
	}
}

// Eight callers, each on its own connection, released together: one calls, all get
// its result.
func TestDo_ConcurrentCallersCallOnce(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	ctx := context.Background()
	var calls atomic.Int32
	fn := func(ctx context.Context, key string) ([]byte, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond) // the external call; lets the others arrive
		return []byte("re_1"), nil
	}
	var start, wg sync.WaitGroup
	start.Add(1)
	results := make(chan string, 8)
	for range 8 {
		cfg := db.Config(t)
		cfg.MaxConns, cfg.MinConns = 1, 1
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		rec := effect.New(pgxdriver.New(pool).Executor(), &effect.Config{PollInterval: 5 * time.Millisecond})
		wg.Go(func() {
			start.Wait()
			got, err := rec.Do(ctx, "webhook:evt_1:refund", fn)
			if err != nil {
				t.Error(err)
			}
			results <- string(got)
		})
	}
	start.Done()
	wg.Wait()
	close(results)
	for r := range results {
		if r != "re_1" {
			t.Fatalf("a caller got %q, want re_1", r)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("fn called %d times, want 1", calls.Load())
	}
}

func TestDo_FailedCallRecordsNothingAndMayBeRetried(t *testing.T) {
	t.Parallel()
	db, rec := setup(t)
	ctx := context.Background()
	boom := errors.New("provider answered 500")
	if _, err := rec.Do(ctx, "webhook:evt_1:refund", func(context.Context, string) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("first Do: %v", err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_effect`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("effects rows after a failure: %d (%v), want 0", n, err)
	}
	got, err := rec.Do(ctx, "webhook:evt_1:refund", func(context.Context, string) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(got) != "ok" {
		t.Fatalf("retry: %q, %v", got, err)
	}
}

// doRecordAfter is the broken variant: check for a recorded result, call, then record,
// with no lease held during the call (it expires at once). A second caller that arrives
// during the call sees nothing recorded and calls again.
func doRecordAfter(ctx context.Context, ex driver.Executor, key string, fn func(context.Context, string) ([]byte, error)) ([]byte, error) {
	c, err := ex.EffectClaim(ctx, &driver.EffectClaimParams{Key: key, Lease: time.Nanosecond})
	if err != nil {
		return nil, err
	}
	if c.Done {
		return c.Result, nil
	}
	// Without a lease that holds, nothing stops a concurrent caller.
	result, err := fn(ctx, key)
	if err == nil && c.Token != 0 {
		_, err = ex.EffectComplete(ctx, key, c.Token, result)
	}
	return result, err
}

// scenarioSecondCallerDuringCall: A is inside fn; B calls Do with the same key and a
// bounded wait. It returns how many times fn ran.
func scenarioSecondCallerDuringCall(t *testing.T, do func(ctx context.Context, key string, fn func(context.Context, string) ([]byte, error)) ([]byte, error)) int32 {
	var calls atomic.Int32
	inCall, release := make(chan struct{}), make(chan struct{})
	fn := func(ctx context.Context, key string) ([]byte, error) {
		if calls.Add(1) == 1 {
			close(inCall)
			<-release
		}
		return []byte("r"), nil
	}
	ctx := context.Background()
	aDone := make(chan struct{})
	go func() { defer close(aDone); _, _ = do(ctx, "webhook:evt_1:op", fn) }()
	<-inCall
	bctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // B gives up waiting
	_, _ = do(bctx, "webhook:evt_1:op", fn)
	cancel()
	close(release)
	<-aDone
	return calls.Load()
}

func TestDo_SecondCallerWaitsInsteadOfCalling(t *testing.T) {
	t.Parallel()
	_, rec := setup(t)
	if n := scenarioSecondCallerDuringCall(t, rec.Do); n != 1 {
		t.Fatalf("fn ran %d times, want 1", n)
	}
}

func TestBrokenRecordAfter_CallsTwice(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	ex := pgxdriver.New(db.Pool).Executor()
	do := func(ctx context.Context, key string, fn func(context.Context, string) ([]byte, error)) ([]byte, error) {
		return doRecordAfter(ctx, ex, key, fn)
	}
	if n := scenarioSecondCallerDuringCall(t, do); n != 2 {
		t.Fatalf("broken variant not caught: fn ran %d times, want 2", n)
	}
}

func TestKey_Validation(t *testing.T) {
	t.Parallel()
	if k, err := effect.Key("evt_1", "refund"); err != nil || k != "webhook:evt_1:refund" {
		t.Fatalf("Key: %q, %v", k, err)
	}
	for name, key := range map[string]string{
		"empty":  "",
		"long":   "webhook:" + strings.Repeat("x", 250),
		"e-mail": "webhook:evt_1:notify-jane.doe@example.com",
	} {
		if err := effect.ValidateKey(key); !errors.Is(err, effect.ErrInvalidKey) {
			t.Errorf("%s: %v, want ErrInvalidKey", name, err)
		}
	}
	if _, err := effect.Key("", "op"); !errors.Is(err, effect.ErrInvalidKey) {
		t.Error("empty event id accepted")
	}
}
