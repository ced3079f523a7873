// Package testnats connects tests to a real NATS server with JetStream: TEST_NATS_URL,
// else 127.0.0.1:4222, else a nats-server binary (PATH or $GOPATH/bin, which
// scripts/test.sh installs) started for the test process. Each test gets its own
// stream and subject.
package testnats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	embeddedOnce.Do(func() { embeddedURL, embeddedErr = startServer() })
	if embeddedErr != nil {
		t.Fatalf("no NATS server with JetStream at 127.0.0.1:4222, and starting one failed: %v\n"+
			"install one with: go install github.com/nats-io/nats-server/v2@v2.15.3", embeddedErr)
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

// startServer runs nats-server with JetStream on a free loopback port, in a directory
// of its own, for the rest of the test process (the kernel reaps it with the process
// group's end; its directory is under the system's temporary folder).
func startServer() (string, error) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		gopath, gerr := exec.Command("go", "env", "GOPATH").Output()
		if gerr != nil {
			return "", err
		}
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "nats-server")
		if _, serr := os.Stat(bin); serr != nil {
			return "", fmt.Errorf("nats-server is not on PATH nor in $GOPATH/bin: %w", serr)
		}
	}
	dir, err := os.MkdirTemp("", "hookinbox-nats-")
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir)
	cmd.SysProcAttr = pdeathsig()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("error starting %s: %w", bin, err)
	}
	u := "nats://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := nats.Connect(u, nats.Timeout(time.Second))
		if err == nil {
			js, jerr := jetstream.New(nc)
			if jerr == nil {
				_, jerr = js.AccountInfo(context.Background())
			}
			nc.Close()
			if jerr == nil {
				return u, nil
			}
			err = jerr
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return "", fmt.Errorf("nats-server at %s did not answer: %w", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
