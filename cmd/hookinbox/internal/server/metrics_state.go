package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/driver"
)

var (
	descReady = prometheus.NewDesc("hookinbox_ready",
		"1 when the database answers and its schema is current (what /readyz checks), else 0. Alert when 0.", nil, nil)
	descPaused = prometheus.NewDesc("hookinbox_endpoint_paused",
		"1 for an endpoint paused in the database (hookinbox endpoints pause, or the console): its receipts and outbox messages wait; 0 otherwise. Absent while the database does not answer.",
		[]string{"endpoint"}, nil)
)

// CollectState exports, read at scrape time like CollectStats: whether the database
// is ready (check is Backend.CheckSchema), and each endpoint's pause state (states
// reads them; the configured endpoints are always listed).
func (m *Metrics) CollectState(check func(context.Context) error, states func(context.Context) ([]*driver.EndpointState, error),
	cfg *config.Config, cacheFor, timeout time.Duration, logger *slog.Logger) {
	names := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		names[i] = ep.Name
	}
	m.registry.MustRegister(&stateCollector{
		ready: cachedRead[bool]{read: func(ctx context.Context) (bool, error) { return check(ctx) == nil, nil },
			what: "readiness", cacheFor: cacheFor, timeout: timeout, logger: logger},
		states: cachedRead[[]*driver.EndpointState]{read: states, what: "endpoint states", cacheFor: cacheFor, timeout: timeout, logger: logger},
		names:  names,
	})
}

type stateCollector struct {
	ready  cachedRead[bool]
	states cachedRead[[]*driver.EndpointState]
	names  []string
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descReady
	ch <- descPaused
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ready, _ := c.ready.get()
	v := 0.0
	if ready {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, v)
	states, err := c.states.get()
	if err != nil {
		return
	}
	paused := map[string]float64{}
	for _, n := range c.names {
		paused[n] = 0
	}
	for _, s := range states {
		paused[s.Endpoint] = 0
		if s.Paused {
			paused[s.Endpoint] = 1
		}
	}
	for name, v := range paused {
		ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, v, name)
	}
}
