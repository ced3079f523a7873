package bench

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// The connPoster must send what net/http's client sends, signed as the scheme
// verifies it, and read every kind of answer a server may give: a Hookinbox-Outcome,
// a chunked body, a refusal, and a Connection: close after which it dials again.
func TestConnPoster_SendsSignedRequestsAndReadsEveryAnswer(t *testing.T) {
	const secret = "whsec_connposter"
	verifier, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the body: %v", err)
		}
		if _, err := verifier.Verify(r.Header, body); err != nil {
			http.Error(w, "bad signature: "+err.Error(), http.StatusBadRequest)
			return
		}
		switch n.Add(1) {
		case 1:
			w.Header().Set("Hookinbox-Outcome", "accepted")
			w.WriteHeader(http.StatusAccepted)
		case 2:
			w.Header().Set("Hookinbox-Outcome", "processed")
			w.(http.Flusher).Flush() // a chunked body
			fmt.Fprint(w, strings.Repeat("x", 10000))
		case 3:
			w.Header().Set("Connection", "close")
			http.Error(w, "refused\n  for a reason", http.StatusBadRequest)
		default:
			w.Header().Set("Hookinbox-Outcome", "duplicate")
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	p, err := newPoster(srv.URL+"/webhooks/stripe", hookinboxtest.Stripe(secret), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if _, ok := p.(*connPoster); !ok {
		t.Fatalf("an http:// URL gets %T, want a *connPoster", p)
	}
	gen, err := newEventGen(stripeTemplate, "stripe", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status  int
		outcome string
	}{{202, "accepted"}, {200, "processed"}, {400, "refused for a reason"}, {200, "duplicate"}}
	for k, w := range want {
		status, outcome, err := p.post(gen.event(int64(k + 1)))
		if err != nil || status != w.status || outcome != w.outcome {
			t.Errorf("request %d: %d %q %v, want %d %q", k+1, status, outcome, err, w.status, w.outcome)
		}
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("%d connections, want 2: one kept alive for three requests, and one after Connection: close", got)
	}
}
