package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/testwait"
)

// TestEndpoints_PausedByConfigThenByTheCommandLine: an endpoint configured paused
// starts paused; its delivery is accepted and waits; the command line resumes it (the
// receipt is processed), pauses it again, and the database's state outlives a restart
// whose config still says paused. Every change is in the audit log with its actor.
func TestEndpoints_PausedByConfigThenByTheCommandLine(t *testing.T) {
	t.Parallel()
	b := setupE2E(t, "")
	raw, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	paused := strings.Replace(string(raw), "    mode: async\n", "    mode: async\n    paused: true\n", 1)
	if err := os.WriteFile(b.config, []byte(paused), 0o600); err != nil {
		t.Fatal(err)
	}
	list := func() map[string]endpointJSON {
		t.Helper()
		var l []endpointJSON
		if err := json.Unmarshal([]byte(mustRun(t, b.env, "endpoints", "list", "--json", "--config", b.config)), &l); err != nil {
			t.Fatal(err)
		}
		m := map[string]endpointJSON{}
		for _, e := range l {
			m[e.Endpoint] = e
		}
		return m
	}
	p := b.serve(t)
	if l := list(); !l["queue"].Paused || l["queue"].ChangedBy != "config" || l["billing"].Paused {
		t.Fatalf("after the first start: %+v", l)
	}
	if got := b.send(t, p, "/webhooks/queue", "--id", "evt_p1", "--invoice", "in_p1"); !strings.HasSuffix(got[0], `200 {"outcome":"accepted"}`) {
		t.Fatalf("send to the paused endpoint: %v", got)
	}
	// The workers meet the receipt and park it: paused, not lost.
	testwait.Until(t, 60*time.Second, "the workers to park the paused endpoint's receipt", func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_p1' AND state = 'pending' AND attempts = 0 AND available_at = '9999-01-01 00:00:00+00'`) == 1
	})
	if v := metric(t, p, `hookinbox_endpoint_paused{endpoint="queue"}`); v != 1 {
		t.Errorf("hookinbox_endpoint_paused for queue: %v, want 1", v)
	}
	if out := mustRun(t, b.env, "endpoints", "resume", "queue", "--note", "ledger back", "--config", b.config); out != "resumed queue\n" {
		t.Errorf("resume printed %q", out)
	}
	testwait.Until(t, 60*time.Second, "the resumed endpoint's receipt to be processed", func() bool {
		return b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_p1' AND state = 'processed'`) == 1
	})
	if out := mustRun(t, b.env, "endpoints", "resume", "queue", "--config", b.config); out != "queue was not paused\n" {
		t.Errorf("a second resume printed %q", out)
	}
	if r := runBinary(t, b.env, "endpoints", "pause", "nope", "--config", b.config); r.code != 2 || !strings.Contains(r.stderr, `no endpoint "nope"`) {
		t.Errorf("pause of an unknown endpoint: exit %d, %q", r.code, r.stderr)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_audit WHERE actor = 'config' AND action = 'pause' AND target = 'endpoint queue'`); n != 1 {
		t.Errorf("audit entries of the configured pause: %d, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_audit WHERE actor LIKE 'cli:%' AND action = 'resume' AND rows = 1 AND note = 'ledger back'`); n != 1 {
		t.Errorf("audit entries of the command line's resume: %d, want 1", n)
	}
	// The stored state outlives a restart whose config still says paused.
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	p = b.serve(t)
	if l := list(); l["queue"].Paused {
		t.Fatalf("a restart paused the resumed endpoint again: %+v", l["queue"])
	}
	if v := metric(t, p, `hookinbox_endpoint_paused{endpoint="queue"}`); v != 0 {
		t.Errorf("hookinbox_endpoint_paused for queue after the resume: %v", v)
	}
	if out := mustRun(t, b.env, "endpoints", "pause", "queue", "--config", b.config); out != "paused queue\n" {
		t.Errorf("pause printed %q", out)
	}
	if l := list(); !l["queue"].Paused || !strings.HasPrefix(l["queue"].ChangedBy, "cli:") {
		t.Errorf("after the pause: %+v", l["queue"])
	}
	// An absent receipt's retry is refused and not audited; a redelivery of an
	// absent message too.
	before := b.count(t, `SELECT count(*) FROM hookinbox_audit`)
	if r := runBinary(t, b.env, "events", "retry", "stripe", "queue", "evt_absent", "--config", b.config); r.code != 1 {
		t.Errorf("retry of an absent receipt: exit %d", r.code)
	}
	if r := runBinary(t, b.env, "outbox", "redeliver", "999", "--config", b.config); r.code != 1 || !strings.Contains(r.stderr, "no published outbox message 999") {
		t.Errorf("redeliver of an absent message: exit %d, %q", r.code, r.stderr)
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_audit`); n != before+1 {
		t.Errorf("audit entries: %d, want %d (the redelivery's 0-row entry only)", n, before+1)
	}
}
