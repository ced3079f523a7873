package bench

import (
	"encoding/json"
	"fmt"
)

// stripeTemplate is a Stripe invoice.paid event with what the billing handler and
// the naive receiver read: the tests' TemplateFunc (the command's is send's
// templates).
func stripeTemplate(provider string, e TemplateEvent) (Template, error) {
	if provider != "stripe" {
		return Template{}, fmt.Errorf("the tests' template is stripe's, not %s", provider)
	}
	body, err := json.Marshal(map[string]any{
		"id": e.ID, "object": "event", "type": "invoice.paid", "created": 1700000000,
		"data": map[string]any{"object": map[string]any{
			"id": e.Invoice, "object": "invoice", "customer": e.Customer, "status": "paid",
			"amount_due": e.Amount, "amount_paid": e.Amount, "currency": e.Currency,
		}},
	})
	return Template{Type: "invoice.paid", SignType: "invoice.paid", Body: body}, err
}
