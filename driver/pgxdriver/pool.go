package pgxdriver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConfigurePool readies each new connection of a pool built from cfg for hookinbox's
// transactions. Call it on the config of the pool you give New; serve does so on its
// own. An AfterConnect already in cfg is kept and runs first.
//
// Each new connection has its server process allocate one block of 1 MiB and free it
// at once (sqlReadyBackend). It leaves no session state. On a server linked with
// glibc (most Linux builds), freeing a block that large raises the process's malloc
// trim threshold to twice its size, for the life of the process. Below that
// threshold, a backend whose transaction allocates a little more than 128 KiB, as a
// group of hookinbox's statements can, gives the memory back to the kernel at each
// commit and asks for it again at the next transaction: brk calls, each shrink
// interrupting the other cores to flush their TLBs. Measured in bench's sync mode at 8 senders, that was half of
// PostgreSQL's CPU per request (docs/BENCHMARKS.md, "PostgreSQL's malloc").
//
// The cost is one statement per new connection, and up to 2 MiB of freed memory a
// backend keeps instead of returning. On other servers it changes nothing. Behind
// PgBouncer in transaction mode only the server session that runs a new client
// connection's first statement is readied.
func ConfigurePool(cfg *pgxpool.Config) {
	own := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if own != nil {
			if err := own(ctx, conn); err != nil {
				return err
			}
		}
		if _, err := conn.Exec(ctx, sqlReadyBackend); err != nil {
			return fmt.Errorf("error readying a new connection: %w", err)
		}
		return nil
	}
}
