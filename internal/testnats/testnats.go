// Package testnats connects tests to a real NATS server with JetStream: TEST_NATS_URL,
// else 127.0.0.1:4222, else a server started in the test process. Each test gets its
// own stream and subject.
package testnats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	embeddedOnce sync.Once
	embeddedURL  string
	embeddedErr  error
)

func url(t testing.TB) string {
	if u := os.Getenv("TEST_NATS_URL"); u != "" {
		return u
	}
	if nc, err := nats.Connect("nats://127.0.0.1:4222", nats.Timeout(2*time.Second)); err == nil {
		js, jerr := jetstream.New(nc)
		if jerr == nil {
			_, jerr = js.AccountInfo(context.Background())
		}
		nc.Close()
		if jerr == nil {
			return "nats://127.0.0.1:4222"
		}
	}
	embeddedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookinbox-nats-")
		if err != nil {
			embeddedErr = err
			return
		}
		srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true})
		if err != nil {
			embeddedErr = err
			return
		}
		go srv.Start()
		if !srv.ReadyForConnections(10 * time.Second) {
			embeddedErr = os.ErrDeadlineExceeded
			return
		}
		embeddedURL = srv.ClientURL()
	})
	if embeddedErr != nil {
		t.Fatalf("no NATS server with JetStream at 127.0.0.1:4222, and starting one in the test failed: %v", embeddedErr)
	}
	return embeddedURL
}

// Stream is one test's JetStream stream.
type Stream struct {
	Conn      *nats.Conn
	JetStream jetstream.JetStream
	Stream    jetstream.Stream
	// Subject is captured by the stream.
	Subject string
}

// New connects and creates a stream with a duplicate window of two minutes, deleted
// when the test ends.
func New(t testing.TB) *Stream {
	t.Helper()
	nc, err := nats.Connect(url(t))
	if err != nil {
		t.Fatalf("error connecting to NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       "HOOKINBOX_TEST_" + id,
		Subjects:   []string{"hookinbox.test." + id + ".>"},
		Duplicates: 2 * time.Minute,
		Storage:    jetstream.MemoryStorage,
	})
	if err != nil {
		t.Fatalf("error creating test stream: %v", err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), "HOOKINBOX_TEST_"+id) })
	return &Stream{Conn: nc, JetStream: js, Stream: stream, Subject: "hookinbox.test." + id + ".events"}
}

// Count returns the number of messages the stream holds.
func (s *Stream) Count(t testing.TB) uint64 {
	t.Helper()
	info, err := s.Stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
