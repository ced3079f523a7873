package server

import "github.com/prometheus/client_golang/prometheus"

// httpMetrics say what the listeners and the body budget did under pressure.
type httpMetrics struct {
	open         *prometheus.GaugeVec
	evicted      *prometheus.CounterVec
	refused      *prometheus.CounterVec
	delayed      *prometheus.CounterVec
	bodyInflight prometheus.Gauge
	bodyRefused  prometheus.Counter
}

func newHTTPMetrics() httpMetrics {
	return httpMetrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookinbox_http_connections_open",
			Help: "Connections open on the listener (main, console), counted against http.max_connections.",
		}, []string{"listener"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_http_connections_evicted_total",
			Help: "Idle connections (nothing sent yet, or waiting between keep-alive requests) closed to admit a new one, by listener and the limit that was reached (max_connections, max_connections_per_address).",
		}, []string{"listener", "limit"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_http_connections_refused_total",
			Help: "New connections closed unread because every connection of their address had a request in progress (max_connections_per_address), by listener and limit.",
		}, []string{"listener", "limit"}),
		delayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_http_connections_delayed_total",
			Help: "Times the listener stopped accepting, a new connection held unread, because every connection within max_connections had a request in progress, by listener.",
		}, []string{"listener"}),
		bodyInflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookinbox_http_body_bytes_inflight",
			Help: "Request body bytes reserved against http.max_inflight_body_bytes: the bodies of the endpoints being received or handled.",
		}),
		bodyRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookinbox_http_body_budget_refused_total",
			Help: "Requests answered 503 with Retry-After before their body was read, because their body did not fit in http.max_inflight_body_bytes.",
		}),
	}
}

func (h httpMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.open, h.evicted, h.refused, h.delayed, h.bodyInflight, h.bodyRefused}
}

// The hooks below accept a nil *Metrics: a listener or budget built without one.

func (m *Metrics) connectionsOpen(listener string, n int64) {
	if m != nil {
		m.http.open.WithLabelValues(listener).Set(float64(n))
	}
}

func (m *Metrics) connectionEvicted(listener, limit string) {
	if m != nil {
		m.http.evicted.WithLabelValues(listener, limit).Inc()
	}
}

func (m *Metrics) connectionRefused(listener, limit string) {
	if m != nil {
		m.http.refused.WithLabelValues(listener, limit).Inc()
	}
}

func (m *Metrics) connectionDelayed(listener string) {
	if m != nil {
		m.http.delayed.WithLabelValues(listener).Inc()
	}
}

func (m *Metrics) bodyBytesInflight(n int64) {
	if m != nil {
		m.http.bodyInflight.Set(float64(n))
	}
}

func (m *Metrics) bodyBudgetRefused() {
	if m != nil {
		m.http.bodyRefused.Inc()
	}
}
