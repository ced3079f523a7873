// Package chaos is hookinbox's chaos harness: it runs the hookinbox binary on a
// private PostgreSQL, drives a workload of invoice facts and SendGrid batches through
// it the way a provider does (duplicates, second Event objects, any order, retries on
// anything but a 2xx), and meanwhile SIGKILLs, restarts and pauses the servers, stops
// PostgreSQL in immediate mode, injects handler and sink failures, and — through
// proxies of its own between each server and PostgreSQL and before the recording
// sink — adds latency, blackholes past the leases, resets, COMMIT answers cut after
// the server committed, and claims and results that arrive past their lease. At the
// end it checks that nothing acknowledged was lost, nothing was processed, forwarded
// or published twice, no cut commit was answered as done, the billing tables match
// the facts, nothing was left unprocessed, and every fault asked for happened.
//
// It is a development tool, not part of the library or the binary: the faults are
// injected by triggers the harness installs in its own throw-away database
// (faults.sql) and by its proxies, so no production code path knows about them. The
// broken variants it must catch are built with tags never in a shipped binary
// (hookinbox_broken_recheck, hookinbox_broken_lease).
//
//	go run ./cmd/hookinbox/internal/chaos/cmd/chaos --hookinbox ./hookinbox   (see scripts/chaos.sh)
package chaos
