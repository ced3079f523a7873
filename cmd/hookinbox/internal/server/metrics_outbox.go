package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookinbox/hookinbox/outbox"
)

// OutboxDelivery counts one outbox delivery attempt (outbox.Config.ObserveFunc).
func (m *Metrics) OutboxDelivery(sink, result string, latency time.Duration) {
	m.outboxDeliveries.WithLabelValues(sink, result).Inc()
	m.outboxDuration.WithLabelValues(sink).Observe(latency.Seconds())
}

// OutboxDuplicate counts a publish that JetStream absorbed as a duplicate
// (outbox.NATSSink.DuplicateFunc).
func (m *Metrics) OutboxDuplicate(sink string) {
	m.outboxDuplicates.WithLabelValues(sink).Inc()
}

// CollectOutboxStats exports the outbox's figures, read with stats at scrape time
// like CollectStats.
func (m *Metrics) CollectOutboxStats(stats func(context.Context) (*outbox.Stats, error), cacheFor, timeout time.Duration, logger *slog.Logger) {
	m.registry.MustRegister(&outboxStatsCollector{read: cachedRead[*outbox.Stats]{
		read: stats, what: "outbox stats", cacheFor: cacheFor, timeout: timeout, logger: logger,
	}})
}

var (
	descOutboxUp = prometheus.NewDesc("hookinbox_outbox_stats_up",
		"1 if the last read of the outbox's figures from the database succeeded, else 0 (and the outbox figures are absent).", nil, nil)
	descOutboxPending = prometheus.NewDesc("hookinbox_outbox_pending",
		"Outbox messages not yet delivered, including those needing review and those no sink of this configuration delivers.", nil, nil)
	descOutboxOldest = prometheus.NewDesc("hookinbox_outbox_oldest_pending_age_seconds",
		"How long the oldest undelivered outbox message has waited; 0 when there is none. Grows while a sink is down.", nil, nil)
	descOutboxNeedsReview = prometheus.NewDesc("hookinbox_outbox_needs_review",
		"Undelivered outbox messages at outbox.max_attempts, waiting for a person (hookinbox outbox list --needs-review). Alert on anything but 0.", nil, nil)
)

// outboxStatsCollector exports Dispatcher.Stats when scraped.
type outboxStatsCollector struct {
	read cachedRead[*outbox.Stats]
}

func (c *outboxStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOutboxUp, descOutboxPending, descOutboxOldest, descOutboxNeedsReview} {
		ch <- d
	}
}

func (c *outboxStatsCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.read.get()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descOutboxUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descOutboxUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(descOutboxPending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(descOutboxOldest, prometheus.GaugeValue, s.OldestPendingAge.Seconds())
	ch <- prometheus.MustNewConstMetric(descOutboxNeedsReview, prometheus.GaugeValue, float64(s.NeedsReview))
}
