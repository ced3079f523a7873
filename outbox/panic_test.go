package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/outbox"
)

// A sink that panics fails its deliveries like any failure: the messages back off,
// reach review with the panic as their error, and the dispatcher goes on delivering
// the other sinks' messages. The process does not go down.
func TestDispatcher_PanickingSinkIsAFailedDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := newRecordingSink(t)
	b.insert(t, 2, "broken")
	b.insert(t, 3, "http")
	d := b.dispatcher(t, outbox.Config{MaxAttempts: 2, Sinks: map[string]outbox.Sink{
		"broken": outbox.SinkFunc(func(context.Context, *hookinboxtype.OutboxMessage) error { panic("sink bug") }),
		"http":   &outbox.HTTPSink{URL: good.URL},
	}})
	b.runUntil(t, func() bool {
		s, err := d.Stats(b.ctx)
		return err == nil && s.NeedsReview == 2 && s.Pending == 2
	}, d)
	list, err := d.List(b.ctx, outbox.ListParams{NeedsReview: true})
	if err != nil || len(list) != 2 {
		t.Fatalf("needs review: %d, %v", len(list), err)
	}
	for _, m := range list {
		if m.Destination != "broken" || m.State != hookinboxtype.StateNeedsReview || m.Attempts != 2 || !strings.Contains(m.LastError, "panicked: sink bug") {
			t.Errorf("message %+v, want the broken sink's, in review after 2 attempts with the panic as its error", m)
		}
	}
	if once, _ := good.counts(); once != 3 {
		t.Fatalf("the working sink got %d messages, want 3", once)
	}
}
