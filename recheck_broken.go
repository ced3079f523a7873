//go:build hookinbox_broken_recheck

package hookinbox

// skipRecheck is true in this deliberately broken build (see recheck.go): a worker
// processes every receipt it claimed, even one that another worker processed after
// this one's lease ran out, and counts its lease from the claim's answer rather than
// from before the claim was sent, so that a late answer (the chaos harness's late
// claims) has it process past the lease the database gave.
const skipRecheck = true
