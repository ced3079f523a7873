package main

import (
	"context"
	"fmt"

	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// receiptOrigin is where a receipt came from, as events show prints it: "delivery"
// (a webhook), "backfill" or "reconcile".
func receiptOrigin(ctx context.Context, b *server.Backend, key hookinboxtype.Key) (string, error) {
	o, err := backfill.ReceiptOrigin(ctx, b.Executor, key)
	if err != nil {
		return "", fmt.Errorf("error reading the receipt's origin: %w", err)
	}
	if o == "" {
		return "delivery", nil
	}
	return o, nil
}
