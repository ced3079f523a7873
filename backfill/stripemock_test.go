package backfill_test

import (
	"errors"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/internal/fakestripe"
)

// stripe-mock checks every request against Stripe's OpenAPI spec (an unknown
// parameter or a malformed created filter is a 400) and answers with its fixtures: one
// event, a plan.created. The billing endpoint has no handler for it, so the first run
// records it as ignored, a backfill's, and the second finds it a duplicate.
func TestStripe_AgainstStripeMock(t *testing.T) {
	t.Parallel()
	url := fakestripe.StartStripeMock(t, "127.0.0.1:15670")
	b := setup(t, hookinbox.ModeSync)
	sc := stripe.NewClient("sk_test_123", stripe.WithBackends(backfill.StripeBackends(backfill.NewHTTPClient(backfill.ClientConfig{}), url)))
	src, err := backfill.NewStripe(sc, backfill.StripeConfig{Types: []string{"invoice.paid", "plan.created"}, PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	first := b.run(t, src, &backfill.Config{Endpoint: endpoint})
	if first.Fed != 1 || first.Counts[hookinbox.OutcomeIgnored] != 1 || first.Last != nil || !first.Done {
		t.Fatalf("first run: %d fed, %v, done %t; want stripe-mock's one event ignored", first.Fed, first.Counts, first.Done)
	}
	var id string
	if err := b.db.Pool.QueryRow(b.ctx, `SELECT event_id FROM hookinbox_inbox WHERE origin = 'backfill'`).Scan(&id); err != nil {
		t.Fatalf("no backfill receipt: %v", err)
	}
	second := b.run(t, src, &backfill.Config{Endpoint: endpoint})
	if second.Counts[hookinbox.OutcomeDuplicate] != 1 || len(second.Counts) != 1 {
		t.Fatalf("second run: %v, want one duplicate", second.Counts)
	}

	// stripe-mock ignores starting_after: a full page (of one) after its event is that
	// event again. The run stops rather than page forever.
	one, err := backfill.NewStripe(sc, backfill.StripeConfig{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := backfill.Run(b.ctx, b.inbox, b.ex, one, &backfill.Config{Endpoint: endpoint, Restart: true})
	if !errors.Is(err, backfill.ErrNoProgress) || res.Pages != 1 {
		t.Fatalf("a list that repeats its cursor: %v after %d pages, want ErrNoProgress after 1", err, res.Pages)
	}
}
