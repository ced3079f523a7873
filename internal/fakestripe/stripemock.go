package fakestripe

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// StripeMockInstall is the command that installs the stripe-mock the tests run.
const StripeMockInstall = "go install github.com/stripe/stripe-mock@v0.203.0"

// StartStripeMock starts stripe-mock on addr (a loopback address the test owns) and
// returns its URL, or skips the test when the binary is not installed (on PATH, or in
// $GOPATH/bin or ~/go/bin). The process is killed when the test ends.
func StartStripeMock(t testing.TB, addr string) string {
	t.Helper()
	bin := stripeMockBinary()
	if bin == "" {
		t.Skipf("stripe-mock is not installed: %s", StripeMockInstall)
	}
	cmd := exec.Command(bin, "-http-addr", addr)
	if err := cmd.Start(); err != nil {
		t.Fatalf("error starting stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Poll the port until it accepts connections.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		if ctx.Err() != nil {
			t.Fatalf("stripe-mock did not listen on %s: %v", addr, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func stripeMockBinary() string {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "stripe-mock")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}
