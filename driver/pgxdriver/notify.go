package pgxdriver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/driver"
)

var _ driver.Notifier = (*Driver)(nil)

// Notify sends a notification on the channel, scoped to the current schema, in its own
// implicit transaction.
func (d *Driver) Notify(ctx context.Context, channel string) error {
	if _, err := d.pool.Exec(ctx, sqlNotify, channel); err != nil {
		return translate(fmt.Errorf("error notifying %s: %w", channel, err))
	}
	return nil
}

// Listen listens on the channel, scoped to the current schema, on a connection of its
// own, closed when Listen returns: Config.ListenConnConfig's when set, else one taken
// out of the pool for good (a connection that has run LISTEN must not serve anyone
// else's transactions). Through a pooler in transaction mode only the first works;
// without it, the caller's polling covers that case.
func (d *Driver) Listen(ctx context.Context, channel string, wake func()) error {
	conn, err := d.listenConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // closing a connection we are done with
	var name string
	if err := conn.QueryRow(ctx, sqlNotifyChannel, channel).Scan(&name); err != nil {
		return translate(fmt.Errorf("error naming channel %s: %w", channel, err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{name}.Sanitize()); err != nil {
		return translate(fmt.Errorf("error listening on %s: %w", name, err))
	}
	wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return translate(fmt.Errorf("error waiting for notifications on %s: %w", name, err))
		}
		wake()
	}
}

func (d *Driver) listenConn(ctx context.Context) (*pgx.Conn, error) {
	if d.listen != nil {
		conn, err := pgx.ConnectConfig(ctx, d.listen)
		if err != nil {
			return nil, translate(fmt.Errorf("error connecting to listen: %w", err))
		}
		return conn, nil
	}
	pc, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, translate(fmt.Errorf("error acquiring a listening connection: %w", err))
	}
	return pc.Hijack(), nil
}
