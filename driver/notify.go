package driver

import "context"

// Channels on which a Notifier wakes other processes. A driver scopes them to the
// schema (or database) it works in, so that tenants sharing a server do not wake
// each other.
const (
	// ChannelInbox announces receipts that became pending.
	ChannelInbox = "hookinbox_inbox"
)

// Notifier is implemented by drivers whose database can wake other processes: on
// PostgreSQL, LISTEN/NOTIFY. It is optional; without it, workers in other processes
// find new work by polling.
type Notifier interface {
	// Notify wakes the listeners of channel in every process. It runs in a transaction
	// of its own, never in the caller's: PostgreSQL serialises the commits of
	// notifying transactions.
	Notify(ctx context.Context, channel string) error

	// Listen calls wake for every notification on channel until ctx ends or its
	// connection fails; it returns the reason. It holds a connection of its own for
	// as long as it runs, and calls wake once as soon as it listens, since something
	// may have been announced while it was not.
	Listen(ctx context.Context, channel string, wake func()) error
}
