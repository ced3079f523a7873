package chaos

import (
	"fmt"
	"strings"
	"time"
)

// Endpoint is one endpoint of a scenario's configuration.
type Endpoint struct {
	Name    string
	Mode    string // sync, async or hybrid
	Handler string // billing or forward
	// Provider is stripe (the default) or sendgrid, whose requests carry batches of
	// events and whose endpoints forward.
	Provider string
}

func (e *Endpoint) provider() string {
	if e.Provider == "" {
		return "stripe"
	}
	return e.Provider
}

// Batched reports whether the endpoint's requests carry several events (SendGrid).
func (e *Endpoint) Batched() bool { return e.Provider == "sendgrid" }

// Path is the endpoint's URL path.
func (e *Endpoint) Path() string { return "/webhooks/" + e.Name }

// Forward reports whether the endpoint forwards its events to the sink.
func (e *Endpoint) Forward() bool { return e.Handler == "forward" }

// ProcGroup is a number of serve processes with the same roles.
type ProcGroup struct {
	// Roles is serve's --role, empty for all three.
	Roles string
	Count int
}

// Receives reports whether the group's processes serve the endpoints.
func (g ProcGroup) Receives() bool { return g.Roles == "" || strings.Contains(g.Roles, "receivers") }

// Dispatches reports whether the group's processes run a dispatcher.
func (g ProcGroup) Dispatches() bool { return g.Roles == "" || strings.Contains(g.Roles, "dispatcher") }

// Scenario is one mode of the harness: a configuration and the processes that run it.
type Scenario struct {
	Name      string
	Endpoints []*Endpoint
	Procs     []ProcGroup
}

// Scenarios are the harness's modes, by name.
var Scenarios = map[string]*Scenario{
	"sync":   single("sync", &Endpoint{Name: "billing", Mode: "sync", Handler: "billing"}),
	"async":  single("async", &Endpoint{Name: "billing", Mode: "async", Handler: "billing"}),
	"hybrid": single("hybrid", &Endpoint{Name: "billing", Mode: "hybrid", Handler: "billing"}),
	"forward": single("forward",
		&Endpoint{Name: "forward-sync", Mode: "sync", Handler: "forward"},
		&Endpoint{Name: "forward-async", Mode: "async", Handler: "forward"},
		&Endpoint{Name: "forward-hybrid", Mode: "hybrid", Handler: "forward"},
		&Endpoint{Name: "sendgrid-sync", Mode: "sync", Handler: "forward", Provider: "sendgrid"},
		&Endpoint{Name: "sendgrid-hybrid", Mode: "hybrid", Handler: "forward", Provider: "sendgrid"}),
	// Issue 12: receivers with workers in three processes and the outbox in two, on
	// one database, with mixed traffic spread over every receiver.
	"multi": {
		Name: "multi",
		Endpoints: []*Endpoint{
			{Name: "billing-sync", Mode: "sync", Handler: "billing"},
			{Name: "billing-async", Mode: "async", Handler: "billing"},
			{Name: "billing-hybrid", Mode: "hybrid", Handler: "billing"},
			{Name: "forward-async", Mode: "async", Handler: "forward"},
			{Name: "forward-sync", Mode: "sync", Handler: "forward"},
			{Name: "sendgrid-async", Mode: "async", Handler: "forward", Provider: "sendgrid"},
		},
		Procs: []ProcGroup{{Roles: "receivers,workers", Count: 3}, {Roles: "dispatcher", Count: 2}},
	},
}

// ScenarioOrder is the order modes run and are printed in.
var ScenarioOrder = []string{"sync", "async", "hybrid", "forward", "multi"}

func single(name string, eps ...*Endpoint) *Scenario {
	return &Scenario{Name: name, Endpoints: eps, Procs: []ProcGroup{{Count: 1}}}
}

// Timing is the servers' settings that the harness's waits and faults depend on.
type Timing struct {
	// WorkerLease and StatementTimeout are worker.lease and worker.statement_timeout;
	// a slow handler sleeps 90 % of the statement timeout in each statement.
	WorkerLease, StatementTimeout string
	// OutboxLease and DeliveryTimeout are outbox.lease and outbox.delivery_timeout; a
	// slow sink answers after the delivery timeout.
	OutboxLease, DeliveryTimeout string
}

// pastLeases is how long a pause, a blackhole or a late claim lasts: past every
// lease, so that its holder wakes up a zombie.
func (t Timing) pastLeases() time.Duration {
	return max(parseDuration(t.WorkerLease), parseDuration(t.OutboxLease)) + time.Second
}

// DefaultTiming keeps leases short, so that a killed process's claims come back
// within seconds, and the statement timeout below the lease as serve requires.
var DefaultTiming = Timing{WorkerLease: "3s", StatementTimeout: "2s", OutboxLease: "3s", DeliveryTimeout: "1s"}

// secretEnv names the variable that holds the Stripe endpoints' signing secret.
const secretEnv = "CHAOS_STRIPE_SECRET"

// config returns the scenario's serve configuration; sendgridKey is the SendGrid
// endpoints' public key.
func (s *Scenario) config(dbURL, sinkURL string, t Timing, sendgridKey string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by the chaos harness (internal/chaos).\ndatabase_url: %s\nendpoints:\n", dbURL)
	billing := false
	for _, ep := range s.Endpoints {
		secrets := "secrets_env: [" + secretEnv + "]"
		if ep.Batched() {
			secrets = "public_keys: [" + sendgridKey + "]"
		}
		fmt.Fprintf(&b, "  - {name: %s, path: %s, provider: %s, %s, mode: %s, handler: %s",
			ep.Name, ep.Path(), ep.provider(), secrets, ep.Mode, ep.Handler)
		if ep.Forward() {
			fmt.Fprintf(&b, ", forward: {url: %s/forward}", sinkURL)
		} else {
			billing = true
		}
		b.WriteString("}\n")
	}
	// max_attempts is far above what kills and 5 % failures use up: a receipt in
	// review is a finding.
	fmt.Fprintf(&b, "worker: {concurrency: 4, lease: %s, statement_timeout: %s, max_attempts: 50, poll_interval: 250ms}\n",
		t.WorkerLease, t.StatementTimeout)
	fmt.Fprintf(&b, "outbox: {concurrency: 4, lease: %s, delivery_timeout: %s, max_attempts: 50, poll_interval: 250ms",
		t.OutboxLease, t.DeliveryTimeout)
	if billing {
		fmt.Fprintf(&b, ", sink: {url: %s/billing}", sinkURL)
	}
	b.WriteString("}\nshutdown_timeout: 5s\n")
	return b.String()
}

func (s *Scenario) billingSink() bool {
	for _, ep := range s.Endpoints {
		if !ep.Forward() {
			return true
		}
	}
	return false
}
