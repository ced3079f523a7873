// Package testwait makes tests wait for the state they assert, never for a time: a
// condition is polled until it holds, and the test fails, saying what it waited for,
// when it does not within a bound that only a broken run reaches. A bound is not a
// measure of speed; a test never asserts one.
//
//	testwait.For(t, 30*time.Second, "every receipt processed", func() (bool, error) {
//		n, err := countUnprocessed(ctx)
//		return n == 0, err
//	})
package testwait

import (
	"testing"
	"time"
)

// The polls start often, for states that take milliseconds, and slow down to a few a
// second for those that take seconds (a subprocess's HTTP answer, a dispatcher's
// backoff), so a wait costs the database little.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 50 * time.Millisecond
)

// For polls cond until it reports true, and fails the test if it has not after
// timeout, with what it waited for and the last error cond returned. An error does
// not end the wait: the state may not be readable yet (a server still starting), or
// the error may say how far from the state the test still is.
func For(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	poll := firstPoll
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("gave up after %s waiting for %s: %v", timeout, what, err)
			}
			t.Fatalf("gave up after %s waiting for %s", timeout, what)
		}
		time.Sleep(poll)
		poll = min(2*poll, maxPoll)
	}
}

// Until is For for a condition that has no error to report.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	For(t, timeout, what, func() (bool, error) { return cond(), nil })
}

// Never polls cond for the whole of during and fails the test as soon as it reports
// true, with what must not happen. It is for a broken variant that shows something
// does not happen: during is many times what it takes when it does.
func Never(t testing.TB, during time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(during)
	poll := firstPoll
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatalf("%s", what)
		}
		time.Sleep(poll)
		poll = min(2*poll, maxPoll)
	}
}
