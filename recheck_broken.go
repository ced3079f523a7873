//go:build hookinbox_broken_recheck

package hookinbox

// skipRecheck is true in this deliberately broken build (see recheck.go): a worker
// processes every receipt it claimed, even one that another worker processed after
// this one's lease ran out.
const skipRecheck = true
