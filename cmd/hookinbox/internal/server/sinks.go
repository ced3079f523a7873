package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/outbox"
)

// DefaultSinkName is the dispatcher's name of outbox.sink, the sink of messages
// written without a destination (the billing handler's InvoicePaymentBooked). It is
// the sink label of their metrics.
const DefaultSinkName = "default"

// ForwardDestination is the outbox destination, and the dispatcher's sink name, of
// the events that the forward endpoint named endpoint forwards.
func ForwardDestination(endpoint string) string { return "endpoint:" + endpoint }

// OutboxObserver is told of every outbox delivery attempt, for metrics. Its methods
// are called on the dispatcher's goroutines and must be quick.
type OutboxObserver interface {
	// OutboxDelivery reports an attempt's result: "delivered", "failed" or "stale".
	OutboxDelivery(sink, result string, latency time.Duration)
	// OutboxDuplicate reports a publish that JetStream acknowledged as a duplicate
	// of a message it already stored (a redelivery the broker absorbed).
	OutboxDuplicate(sink string)
}

// sinks are the outbox's delivery targets for a configuration, and the NATS
// connection they publish on.
type sinks struct {
	byName      map[string]outbox.Sink
	options     map[string]outbox.SinkOptions
	defaultSink string
	// nc is nil when no sink publishes to NATS.
	nc *nats.Conn
}

// openSinks builds a sink for every forward endpoint and for outbox.sink. When one
// of them publishes to NATS it connects to cfg.NATSURL without waiting for the
// server: serve starts while NATS is down, deliveries to NATS fail and back off,
// and the connection keeps retrying until the server is back.
func openSinks(cfg *config.Config, obs OutboxObserver, logger *slog.Logger) (*sinks, error) {
	s := &sinks{byName: map[string]outbox.Sink{}, options: map[string]outbox.SinkOptions{}}
	var js jetstream.JetStream
	if cfg.UsesNATS() {
		var err error
		if s.nc, err = connectNATS(cfg.NATSURL, logger); err != nil {
			return nil, err
		}
		if js, err = jetstream.New(s.nc); err != nil {
			s.nc.Close()
			return nil, fmt.Errorf("error creating a JetStream context: %w", err)
		}
	}
	build := func(name string, c *config.Sink) outbox.Sink {
		if c.NATSSubject != "" {
			return &outbox.NATSSink{JetStream: js, Subject: c.NATSSubject, DuplicateFunc: func(*hookinboxtype.OutboxMessage) {
				if obs != nil {
					obs.OutboxDuplicate(name)
				}
			}}
		}
		// The library's client: no redirects, bounded by the delivery timeout.
		return &outbox.HTTPSink{URL: c.URL}
	}
	for _, ep := range cfg.Endpoints {
		if ep.Forward != nil {
			name := ForwardDestination(ep.Name)
			s.byName[name] = build(name, ep.Forward)
			s.options[name] = ep.Forward.Options
		}
	}
	if cfg.OutboxSink != nil {
		s.byName[DefaultSinkName] = build(DefaultSinkName, cfg.OutboxSink)
		s.options[DefaultSinkName] = cfg.OutboxSink.Options
		s.defaultSink = DefaultSinkName
	}
	return s, nil
}

// connectNATS connects for publishing. Publishes fail at once while the connection
// is down rather than wait in a reconnect buffer: the dispatcher records the failure
// and retries with backoff, and nothing is sent behind its back later.
func connectNATS(url string, logger *slog.Logger) (*nats.Conn, error) {
	nc, err := nats.Connect(url,
		nats.Name("hookinbox"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectBufSize(-1),
		nats.ConnectHandler(func(nc *nats.Conn) {
			logger.Info("hookinbox: NATS connected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			args := []any{}
			if err != nil {
				args = append(args, "error", err.Error())
			}
			logger.Warn("hookinbox: NATS disconnected; deliveries to NATS fail and are retried until it is back", args...)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("hookinbox: NATS reconnected", "server", nc.ConnectedUrlRedacted())
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("error connecting to NATS: %w", err)
	}
	if !nc.IsConnected() {
		logger.Warn("hookinbox: NATS is unreachable; serving anyway: deliveries to NATS fail and are retried until it is reachable")
	}
	return nc, nil
}

// natsState returns "connected" or "disconnected", and false when no sink uses NATS.
func (s *sinks) natsState() (string, bool) {
	if s == nil || s.nc == nil {
		return "", false
	}
	if s.nc.IsConnected() {
		return "connected", true
	}
	return "disconnected", true
}

func (s *sinks) close() {
	if s != nil && s.nc != nil {
		s.nc.Close()
	}
}
