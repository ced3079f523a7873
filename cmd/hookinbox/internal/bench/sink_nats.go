package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsSink is forward's JetStream destination: a stream of the run's own, which
// bench creates and deletes, capturing the subject the endpoint forwards to. What
// the stream stores is what was delivered: the publish acknowledgement is the
// outbox's delivery.
//
// It reads the stream's message count while the run waits, and the messages
// themselves only afterwards, with their storage times: reading them during the run
// would take CPU from the server it measures.
type natsSink struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	subject string
	natsURL string

	mu   sync.Mutex
	last int64
}

// startNATSSink connects to url and creates the run's stream, file-backed as a
// production stream is, with a duplicate window longer than any run's redelivery.
func startNATSSink(ctx context.Context, url string) (*natsSink, error) {
	nc, err := nats.Connect(url, nats.Name("hookinbox-bench"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("error connecting to NATS at %s (--sink nats needs a NATS server with JetStream: --nats-url): %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("error opening JetStream at %s: %w", url, err)
	}
	id := randomHex(4)
	s := &natsSink{nc: nc, js: js, name: "HOOKINBOX_BENCH_" + strings.ToUpper(id),
		subject: "hookinbox.bench." + id + ".events", natsURL: url}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.stream, err = js.CreateStream(cctx, jetstream.StreamConfig{
		Name:       s.name,
		Subjects:   []string{s.subject},
		Duplicates: 10 * time.Minute,
		Storage:    jetstream.FileStorage,
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("error creating JetStream stream %s at %s: %w", s.name, url, err)
	}
	return s, nil
}

func (s *natsSink) forward() string { return fmt.Sprintf("{nats_subject: %q}", s.subject) }

func (s *natsSink) delivered() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if info, err := s.stream.Info(ctx); err == nil {
		s.last = int64(info.State.Msgs)
	}
	return s.last
}

func (s *natsSink) report(want int64, loadStart time.Time, started *sync.Map) (*ForwardReport, error) {
	first, redeliveries, err := s.read()
	if err != nil {
		return nil, err
	}
	fr := forwardFigures(first, redeliveries, want, loadStart, started)
	fr.Sink = s.describe()
	fr.Stream = s.name
	return fr, nil
}

func (s *natsSink) firsts() (map[string]time.Time, int64, error) { return s.read() }

func (s *natsSink) describe() string {
	return fmt.Sprintf("JetStream stream %s at %s, file storage", s.name, s.natsURL)
}

// read reads every message of the stream: the time JetStream stored the first of
// each source event, and how many more a source event had (a publish the duplicate
// window did not absorb).
func (s *natsSink) read() (map[string]time.Time, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("error reading stream %s: %w", s.name, err)
	}
	total := int(info.State.Msgs)
	first := make(map[string]time.Time, total)
	var redeliveries int64
	if total == 0 {
		return first, 0, nil
	}
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, 0, fmt.Errorf("error reading stream %s: %w", s.name, err)
	}
	for read := 0; read < total; {
		batch, err := cons.Fetch(min(total-read, 1000), jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			return nil, 0, fmt.Errorf("error reading stream %s: %w", s.name, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				return nil, 0, fmt.Errorf("error reading stream %s: %w", s.name, err)
			}
			id := msg.Headers().Get("Hookinbox-Source-Event-Id")
			if at, seen := first[id]; seen {
				redeliveries++
				if meta.Timestamp.Before(at) {
					first[id] = meta.Timestamp
				}
			} else {
				first[id] = meta.Timestamp
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, 0, fmt.Errorf("error reading stream %s: %w", s.name, err)
		}
		if n == 0 {
			return nil, 0, fmt.Errorf("error reading stream %s: %d of %d messages read", s.name, read, total)
		}
		read += n
	}
	return first, redeliveries, nil
}

// close deletes the stream, which runs after an interrupt too.
func (s *natsSink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.js.DeleteStream(ctx, s.name)
	s.nc.Close()
}
