package testwait

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the test, so
// that the helper's own failures can be asserted.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r) // as t.Fatalf ends the test's goroutine
}

// run calls fn with a recorder and returns what it failed with, "" if it did not.
func run(t *testing.T, fn func(tb testing.TB)) (failed string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil {
			if p != r {
				panic(p)
			}
			failed = r.failed
		}
	}()
	fn(r)
	return ""
}

func TestFor_ReturnsOnceTheStateHolds(t *testing.T) {
	t.Parallel()
	var polls atomic.Int32
	failed := run(t, func(tb testing.TB) {
		For(tb, time.Minute, "three polls", func() (bool, error) {
			return polls.Add(1) == 3, errors.New("not yet")
		})
	})
	if failed != "" || polls.Load() != 3 {
		t.Fatalf("failed %q after %d polls, want success on the third", failed, polls.Load())
	}
}

// A state that never holds fails the test, with what was awaited and the last error.
func TestFor_FailsWithWhatAndTheLastError(t *testing.T) {
	t.Parallel()
	var polls atomic.Int32
	failed := run(t, func(tb testing.TB) {
		For(tb, 20*time.Millisecond, "the receipt processed", func() (bool, error) {
			return false, fmt.Errorf("2 receipts pending (poll %d)", polls.Add(1))
		})
	})
	if !strings.Contains(failed, "the receipt processed") || !strings.Contains(failed, "2 receipts pending") || polls.Load() < 2 {
		t.Fatalf("failed %q after %d polls", failed, polls.Load())
	}
}

func TestNever_FailsAsSoonAsItHappens(t *testing.T) {
	t.Parallel()
	var polls atomic.Int32
	if failed := run(t, func(tb testing.TB) {
		Never(tb, time.Minute, "woken without a notification", func() bool { return polls.Add(1) == 2 })
	}); !strings.Contains(failed, "woken without a notification") {
		t.Fatalf("failed %q, want the test failed on the second poll", failed)
	}
	if failed := run(t, func(tb testing.TB) { Never(tb, 20*time.Millisecond, "never", func() bool { return false }) }); failed != "" {
		t.Fatalf("failed %q, want nothing", failed)
	}
}
