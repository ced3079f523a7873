package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookinbox/hookinbox"
)

// Metrics exports hookinbox's Prometheus metrics: counters and histograms fed by the
// inbox's Observer hook, and gauges read from the database (Inbox.Stats) when
// scraped. It uses a registry of its own, with the Go and process collectors.
type Metrics struct {
	registry *prometheus.Registry

	deliveries       *prometheus.CounterVec
	deliveryDuration *prometheus.HistogramVec
	secretSlots      *prometheus.CounterVec
	attempts         *prometheus.CounterVec
	attemptDuration  *prometheus.HistogramVec
	exhausted        *prometheus.CounterVec
	bodyConflicts    *prometheus.CounterVec
	groupSize        *prometheus.HistogramVec
	groupFailures    *prometheus.CounterVec

	outboxDeliveries *prometheus.CounterVec
	outboxDuration   *prometheus.HistogramVec
	outboxDuplicates *prometheus.CounterVec

	http httpMetrics
}

var (
	_ hookinbox.GroupObserver = (*Metrics)(nil)
	_ OutboxObserver          = (*Metrics)(nil)
)

// SetRoles exports the roles this process runs, as hookinbox_role{role} = 1 for each.
func (m *Metrics) SetRoles(roles []string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hookinbox_role",
		Help: "1 for each role this process runs: receivers, workers, dispatcher (serve --role).",
	}, []string{"role"})
	for _, r := range roles {
		g.WithLabelValues(r).Set(1)
	}
	m.registry.MustRegister(g)
}

// NewMetrics returns the metrics, with nothing observed yet.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_deliveries_total",
			Help: "HTTP requests to webhook endpoints, by endpoint, outcome (processed, duplicate, ignored, accepted, or the refusal: method, media_type, too_large, read, signature, unauthorized, invalid_event, unavailable, error) and status code.",
		}, []string{"endpoint", "outcome", "status"}),
		deliveryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_delivery_duration_seconds",
			Help:    "Time from request to answer on webhook endpoints, including the receive transaction.",
			Buckets: prometheus.DefBuckets,
		}, []string{"endpoint"}),
		secretSlots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_secret_slot_total",
			Help: "Verified deliveries by the position of the secret that verified them (0 = first configured); during a rotation, shows when the old secret is no longer used.",
		}, []string{"endpoint", "slot"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_attempts_total",
			Help: "Worker processing attempts by endpoint and result (processed, failed, timeout, already_processed).",
		}, []string{"endpoint", "result"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_processing_duration_seconds",
			Help:    "Duration of worker processing attempts.",
			Buckets: prometheus.DefBuckets,
		}, []string{"endpoint"}),
		exhausted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_attempts_exhausted_total",
			Help: "Receipts whose last allowed attempt failed: they now need review (see hookinbox events list --needs-review).",
		}, []string{"endpoint"}),
		bodyConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_duplicate_body_conflicts_total",
			Help: "Duplicates whose body differs from the first delivery's, which was kept (see hookinbox events list --conflicts): a provider's bug, a changed replay, or two senders sharing an id space.",
		}, []string{"endpoint"}),
		groupSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_group_commit_size",
			Help:    "Deliveries per group commit, by kind: accept (accepted receipts in one INSERT) or sync (sync and hybrid deliveries in one transaction). Groups grow with load; a size of 1 is a delivery that found no other waiting.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}, []string{"kind"}),
		groupFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_group_commit_failures_total",
			Help: "Group commits that failed as a whole, by kind: their deliveries were then committed in halves (accept) or each alone (sync).",
		}, []string{"kind"}),
		outboxDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_outbox_deliveries_total",
			Help: `Outbox delivery attempts by sink ("endpoint:<name>" for forward endpoints, "default" for outbox.sink) and result (delivered, failed, stale: the lease ran out before the result was recorded).`,
		}, []string{"sink", "result"}),
		outboxDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookinbox_outbox_delivery_duration_seconds",
			Help:    "Duration of outbox delivery attempts, until the sink's answer.",
			Buckets: prometheus.DefBuckets,
		}, []string{"sink"}),
		outboxDuplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookinbox_outbox_duplicates_total",
			Help: "Publishes that JetStream acknowledged as duplicates of stored messages (Nats-Msg-Id): redeliveries the broker absorbed. Also counted as delivered.",
		}, []string{"sink"}),
		http: newHTTPMetrics(),
	}
	m.registry.MustRegister(m.http.collectors()...)
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.deliveries, m.deliveryDuration, m.secretSlots, m.attempts, m.attemptDuration, m.exhausted, m.bodyConflicts,
		m.groupSize, m.groupFailures,
		m.outboxDeliveries, m.outboxDuration, m.outboxDuplicates,
	)
	return m
}

// Delivery counts one request. Refusals are counted under their reason, so a spike of
// bad signatures is visible without reading logs.
func (m *Metrics) Delivery(d hookinbox.DeliveryInfo) {
	outcome := string(d.Outcome)
	if outcome == "" {
		outcome = d.Reason
	}
	m.deliveries.WithLabelValues(d.Endpoint, outcome, strconv.Itoa(d.Status)).Inc()
	m.deliveryDuration.WithLabelValues(d.Endpoint).Observe(d.Latency.Seconds())
	if d.SecretIndex >= 0 {
		m.secretSlots.WithLabelValues(d.Endpoint, strconv.Itoa(d.SecretIndex)).Inc()
	}
	if d.BodyConflict {
		m.bodyConflicts.WithLabelValues(d.Endpoint).Inc()
	}
}

// Attempt counts one worker attempt.
func (m *Metrics) Attempt(a hookinbox.AttemptInfo) {
	m.attempts.WithLabelValues(a.Endpoint, string(a.Result)).Inc()
	m.attemptDuration.WithLabelValues(a.Endpoint).Observe(a.Latency.Seconds())
	if a.NeedsReview {
		m.exhausted.WithLabelValues(a.Endpoint).Inc()
	}
}

// Group counts one group commit.
func (m *Metrics) Group(g hookinbox.GroupInfo) {
	m.groupSize.WithLabelValues(g.Kind).Observe(float64(g.Size))
	if g.Failed {
		m.groupFailures.WithLabelValues(g.Kind).Inc()
	}
}

// CollectStats exports the inbox's monitoring figures, read with stats at scrape time
// (at most once per cacheFor, each read bounded by timeout so a slow database cannot
// hang the scrape).
func (m *Metrics) CollectStats(stats func(context.Context) (*hookinbox.Stats, error), cacheFor, timeout time.Duration, logger *slog.Logger) {
	m.registry.MustRegister(&statsCollector{read: cachedRead[*hookinbox.Stats]{
		read: stats, what: "inbox stats", cacheFor: cacheFor, timeout: timeout, logger: logger,
	}})
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

var (
	descUp = prometheus.NewDesc("hookinbox_stats_up",
		"1 if the last read of the inbox's figures from the database succeeded, else 0 (and the figures below are absent).", nil, nil)
	descUnprocessed = prometheus.NewDesc("hookinbox_unprocessed",
		"Receipts not yet processed, including those needing review.", nil, nil)
	descOldest = prometheus.NewDesc("hookinbox_oldest_unprocessed_age_seconds",
		"How long the oldest unprocessed receipt has waited; 0 when there is none. The first sign that processing has stalled.", nil, nil)
	descOldestPending = prometheus.NewDesc("hookinbox_oldest_pending_age_seconds",
		"How long the oldest pending receipt has waited, those that need review left out; 0 when there is none. Grows while the workers stall, or while an endpoint is paused.", nil, nil)
	descNeedsReview = prometheus.NewDesc("hookinbox_needs_review",
		"Unprocessed receipts at max attempts, waiting for a person. Alert on anything but 0.", nil, nil)
	descRecent = prometheus.NewDesc("hookinbox_received_last_hour",
		"Receipts received in the last hour, by event type.", []string{"event_type"}, nil)
	descTableBytes = prometheus.NewDesc("hookinbox_table_bytes",
		"Space taken by each of hookinbox's tables with its indexes (retention keeps it bounded).", []string{"table"}, nil)
	descTableRows = prometheus.NewDesc("hookinbox_table_rows",
		"Rows of each of hookinbox's tables: counted on SQLite, PostgreSQL's estimate (absent before the table's first VACUUM or ANALYZE).", []string{"table"}, nil)
)

// statsCollector exports Inbox.Stats when scraped.
type statsCollector struct {
	read cachedRead[*hookinbox.Stats]
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descUnprocessed, descOldest, descOldestPending, descNeedsReview, descRecent, descTableBytes, descTableRows} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.read.get()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(descUnprocessed, prometheus.GaugeValue, float64(s.Unprocessed))
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, s.OldestUnprocessedAge.Seconds())
	ch <- prometheus.MustNewConstMetric(descOldestPending, prometheus.GaugeValue, s.OldestPendingAge.Seconds())
	ch <- prometheus.MustNewConstMetric(descNeedsReview, prometheus.GaugeValue, float64(s.NeedsReview))
	for _, tc := range s.ReceivedLastHour {
		ch <- prometheus.MustNewConstMetric(descRecent, prometheus.GaugeValue, float64(tc.Count), tc.EventType)
	}
	for _, t := range s.Tables {
		if t.Bytes >= 0 {
			ch <- prometheus.MustNewConstMetric(descTableBytes, prometheus.GaugeValue, float64(t.Bytes), t.Table)
		}
		if t.Rows >= 0 {
			ch <- prometheus.MustNewConstMetric(descTableRows, prometheus.GaugeValue, float64(t.Rows), t.Table)
		}
	}
}

// cachedRead reads figures from the database when scraped and caches the result
// briefly, so several scrapers (or a fast scrape interval) cost one query, and a
// slow database cannot hang the scrape.
type cachedRead[T any] struct {
	read     func(context.Context) (T, error)
	what     string
	cacheFor time.Duration
	timeout  time.Duration
	logger   *slog.Logger

	mu     sync.Mutex
	at     time.Time
	cached T
	err    error
}

func (c *cachedRead[T]) get() (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.cacheFor {
		return c.cached, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	v, err := c.read(ctx)
	if err != nil && (c.err == nil || c.at.IsZero()) {
		c.logger.Warn("hookinbox: error reading "+c.what+" for metrics", "error", err.Error())
	}
	c.at, c.cached, c.err = time.Now(), v, err
	return v, err
}
