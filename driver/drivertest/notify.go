package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// driver.Notifier, for the drivers that implement it (a driver that does not leaves
// its workers to poll, and these behaviours are skipped).

func notifierBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "Listen", name: "WakesOnceListeningThenForEveryNotification", run: testListen[TTx]},
		{method: "Notify", name: "WakesTheListenersOfAnotherProcess", run: testNotify[TTx]},
	}
}

func notifier[TTx any](t *testing.T, d driver.Driver[TTx]) driver.Notifier {
	t.Helper()
	n, ok := d.(driver.Notifier)
	if !ok {
		t.Skipf("%s does not implement driver.Notifier", d.Name())
	}
	return n
}

// listen runs Listen on channel until the test ends; each wake arrives on the channel
// returned.
func listen(t *testing.T, n driver.Notifier, channel string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wakes := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() {
		done <- n.Listen(ctx, channel, func() {
			select {
			case wakes <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Listen ended with %v, want the context's end", err)
		}
	})
	return wakes
}

// awaitWake waits for a wake, failing the test after a bound that only a lost
// notification reaches.
func awaitWake(t *testing.T, wakes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wakes:
	case <-time.After(30 * time.Second):
		t.Fatalf("no wake: %s", what)
	}
}

func testListen[TTx any](t *testing.T, b *bundle[TTx]) {
	n := notifier(t, b.d)
	wakes := listen(t, n, driver.ChannelInbox)
	awaitWake(t, wakes, "Listen calls wake once it listens")
	for range 2 {
		if err := n.Notify(b.ctx, driver.ChannelInbox); err != nil {
			t.Fatal(err)
		}
		awaitWake(t, wakes, "a notification on the channel")
	}
}

func testNotify[TTx any](t *testing.T, b *bundle[TTx]) {
	n := notifier(t, b.d)
	if err := n.Notify(b.ctx, driver.ChannelInbox); err != nil {
		t.Fatalf("a notification nobody listens for: %v", err)
	}
	wakes := listen(t, n, driver.ChannelInbox)
	awaitWake(t, wakes, "Listen calls wake once it listens")
	if err := notifier(t, b.h.Other(t)).Notify(b.ctx, driver.ChannelInbox); err != nil {
		t.Fatal(err)
	}
	awaitWake(t, wakes, "another process's notification")
}
