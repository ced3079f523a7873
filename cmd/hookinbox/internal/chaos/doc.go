// Package chaos is hookinbox's chaos harness: it runs the hookinbox binary on a
// private PostgreSQL, drives a workload of invoice facts through it the way a
// provider does (duplicates, second Event objects, any order, retries on anything but
// a 2xx), and meanwhile SIGKILLs the servers, stops PostgreSQL in immediate mode and
// injects handler failures and slow handlers. At the end it checks that nothing
// acknowledged was lost, nothing was processed or forwarded twice, the billing tables
// match the facts, and nothing was left unprocessed.
//
// It is a development tool, not part of the library or the binary: the faults are
// injected by triggers the harness installs in its own throw-away database
// (faults.sql), so no production code path knows about them.
//
//	go run ./internal/chaos/cmd/chaos --hookinbox ./hookinbox   (see scripts/chaos.sh)
package chaos
