package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// raceEnabled is set by race_test.go.
var raceEnabled bool

// binary is the hookinbox binary the black-box tests run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hookinbox-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "hookinbox")
	buildArgs := []string{"build", "-o", binary}
	if raceEnabled {
		buildArgs = append(buildArgs, "-race")
	}
	build := exec.Command("go", append(buildArgs, ".")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "error building hookinbox:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// schemaURL returns a database URL whose sessions use db's schema and are named after
// it (so testdb.WaitForLockWaiters sees them). host replaces the server's host:port
// when not empty.
func schemaURL(t *testing.T, db *testdb.DB, host string) string {
	t.Helper()
	u, err := url.Parse(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		u.Host = host
	}
	q := u.Query()
	q.Set("search_path", db.Schema)
	q.Set("application_name", db.Schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// childEnv is the environment of a child process: this one's, without anything that
// configures hookinbox, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOOKINBOX_") {
			env = append(env, kv)
		}
	}
	if _, set := os.LookupEnv("GORACE"); !set {
		// A race-enabled binary otherwise sleeps 1 s before every exit, which is most
		// of these tests' wall time. A race is still reported, and fails the command.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(env, extra...)
}

// result is how a command ended.
type result struct {
	stdout, stderr string
	code           int
}

// runBinary runs the binary to completion.
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runBinaryIn(t, "", env, args...)
}

// runBinaryIn runs the binary to completion in the working directory dir ("" for
// this process's).
func runBinaryIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env, cmd.Dir = env, dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("error running hookinbox %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// mustRun runs the binary and fails the test unless it exits 0.
func mustRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	return mustRunIn(t, "", env, args...)
}

// mustRunIn is mustRun in the working directory dir.
func mustRunIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	r := runBinaryIn(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("hookinbox %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// serveProc is a running "hookinbox serve".
type serveProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string // the bound address, from the "listening" log line

	mu   sync.Mutex
	logs bytes.Buffer

	done     chan struct{}
	exitCode int
}

// startServe starts serve with args and waits until it listens.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	return startServeIn(t, "", env, args...)
}

// startServeIn is startServe in the working directory dir ("" for this process's).
func startServeIn(t *testing.T, dir string, env []string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{t: t, done: make(chan struct{})}
	p.cmd = exec.Command(binary, append([]string{"serve"}, args...)...)
	p.cmd.Env, p.cmd.Dir = env, dir
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "hookinbox: listening" {
				listening <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = p.cmd.Wait()
		p.exitCode = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("serve logs:\n%s", p.Logs())
		}
	})
	select {
	case p.addr = <-listening:
	case <-p.done:
		t.Fatalf("serve exited with %d before listening:\n%s", p.exitCode, p.Logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen within 30 s:\n%s", p.Logs())
	}
	return p
}

// Logs returns what serve wrote to stderr so far.
func (p *serveProc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func (p *serveProc) url(path string) string { return "http://" + p.addr + path }

func (p *serveProc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait returns serve's exit code, failing the test if it has not exited within limit.
func (p *serveProc) wait(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.exitCode
	case <-time.After(limit):
		p.t.Fatalf("serve did not exit within %s", limit)
		return -1
	}
}

// burst sends total distinct invoice.paid events (evt_<prefix>_NNN for invoice
// in_<prefix>_NNN) to url, signed with e2eSecret, concurrency requests at a time. It
// returns the Hookinbox-Outcome of every event answered 2xx, by event id; a request
// that fails or is refused is skipped, as a sender would retry it later. onAck, when
// set, is called after each 2xx with the number answered so far.
func burst(t *testing.T, url, prefix string, total, concurrency int, onAck func(n int)) map[string]string {
	t.Helper()
	var (
		mu    sync.Mutex
		acked = map[string]string{}
		wg    sync.WaitGroup
	)
	jobs := make(chan int, total)
	for i := range total {
		jobs <- i
	}
	close(jobs)
	client := &http.Client{Timeout: 30 * time.Second}
	signer := hookinboxtest.Stripe(e2eSecret)
	for range concurrency {
		wg.Go(func() {
			for i := range jobs {
				id := fmt.Sprintf("evt_%s_%03d", prefix, i)
				body := fmt.Appendf(nil, `{"id":%q,"type":"invoice.paid","data":{"object":{"id":"in_%s_%03d","customer":"cus_b","amount_paid":100,"currency":"eur"}}}`, id, prefix, i)
				req, err := hookinboxtest.NewRequest(url, signer, body)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					continue
				}
				mu.Lock()
				acked[id] = resp.Header.Get("Hookinbox-Outcome")
				n := len(acked)
				mu.Unlock()
				if onAck != nil {
					onAck(n)
				}
			}
		})
	}
	wg.Wait()
	return acked
}

// get returns the status and body of a GET, or 0 if the request failed.
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// tcpProxy forwards connections to a target and can make it unreachable, so a test
// can take the database away from serve and give it back without touching the
// shared server.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.setDown(true)
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(s, c); s.Close() })
	wg.Go(func() { _, _ = io.Copy(c, s); c.Close() })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// setDown makes the target unreachable (closing every open connection) or reachable
// again.
func (p *tcpProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
	}
}
