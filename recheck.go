//go:build !hookinbox_broken_recheck

package hookinbox

// skipRecheck is false: a worker processes only the receipts its lock statement
// found still pending. The build tag hookinbox_broken_recheck, never in a shipped
// binary, makes it true: the broken variant that the chaos harness
// (cmd/hookinbox/internal/chaos) must catch applying an event twice.
const skipRecheck = false
