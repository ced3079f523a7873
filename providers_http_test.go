package hookinbox_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// providerCase is one scheme as an endpoint is configured for it, with an event body
// of the provider's shape.
type providerCase struct {
	name   string
	secret string
	params map[string]string
	body   string
}

var providerCases = []providerCase{
	{name: "stripe", secret: "whsec_stripe_test", body: `{"id":"evt_1","type":"invoice.paid","description":"` + payloadMarker + `"}`},
	{name: "github", secret: "It's a Secret to Everybody", body: `{"id":"d-1","type":"issues","action":"opened","description":"` + payloadMarker + `"}`},
	{name: "shopify", secret: "shpss_test", body: `{"id":"sh-1","type":"orders/create","description":"` + payloadMarker + `"}`},
	{name: "slack", secret: "8f742231b10e8888abcd99yyyzzz85a5", body: `{"type":"event_callback","event_id":"Ev1","event":{"type":"message","text":"` + payloadMarker + `"}}`},
	{name: "standardwebhooks", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", body: `{"id":"msg_1","type":"user.created","description":"` + payloadMarker + `"}`},
	{name: "hmac", secret: "generic-secret", params: map[string]string{"header": "X-Signature", "prefix": "sha256=", "encoding": "hex"},
		body: `{"id":"g-1","type":"thing.happened","description":"` + payloadMarker + `"}`},
}

// Every scheme through HTTP: a signed delivery is processed and its copy is a
// duplicate; a request with no signature, a changed body or the wrong secret, or a
// signed body that is not JSON, is refused with 4xx and writes nothing.
func TestEndpoint_EveryProviderRefusesWithoutWriting(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	mux := http.NewServeMux()
	signers := map[string]hookinboxtest.Signer{}
	wrong := map[string]hookinboxtest.Signer{}
	var endpoints []hookinbox.EndpointConfig
	for _, pc := range providerCases {
		v, err := provider.New(pc.name, provider.Options{Secrets: []string{pc.secret}, Params: pc.params})
		if err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}
		endpoints = append(endpoints, hookinbox.EndpointConfig{Name: pc.name, Verifier: v})
		if signers[pc.name], err = hookinboxtest.SignerFor(pc.name, []string{pc.secret}, pc.params); err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}
		other := "whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldA=="
		if wrong[pc.name], err = hookinboxtest.SignerFor(pc.name, []string{other}, pc.params); err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}
	}
	inbox, err := hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{Endpoints: endpoints, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range providerCases {
		inbox.Handle(pc.name, "*", countingHandler)
		mux.Handle("/"+pc.name, inbox.Endpoint(pc.name))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	send := func(path string, body []byte, h http.Header) (int, string) {
		return postSigned(t, srv.URL+path, body, h)
	}
	for _, pc := range providerCases {
		body := []byte(pc.body)
		good, err := signers[pc.name].Sign(body, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}
		bad, err := wrong[pc.name].Sign(body, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}
		changed := bytes.Replace(body, []byte(payloadMarker), []byte(strings.ToUpper(payloadMarker)), 1)
		// Refused by the verifier where the scheme reads the id or type from the body,
		// by receiving's own check where it does not (Shopify: headers).
		notJSON := []byte(`id=nj-1&type=thing.happened`)
		var signedNotJSON http.Header
		if es, ok := signers[pc.name].(hookinboxtest.EventSigner); ok {
			signedNotJSON, err = es.SignEvent(notJSON, time.Now(), "nj-1", "thing.happened")
		} else {
			signedNotJSON, err = signers[pc.name].Sign(notJSON, time.Now())
		}
		if err != nil {
			t.Fatalf("%s: %v", pc.name, err)
		}

		for _, refused := range []struct {
			what string
			body []byte
			h    http.Header
		}{
			{"no signature", body, http.Header{}},
			{"wrong secret", body, bad},
			{"one byte changed", changed, good},
			{"signed, not JSON", notJSON, signedNotJSON},
		} {
			before := b.tableCounts(t)
			status, _ := send("/"+pc.name, refused.body, refused.h)
			if status != 400 && status != 401 {
				t.Errorf("%s, %s: status %d, want 400 or 401", pc.name, refused.what, status)
			}
			if after := b.tableCounts(t); after != before {
				t.Errorf("%s, %s: wrote rows\nbefore %s\nafter  %s", pc.name, refused.what, before, after)
			}
		}
		if status, out := send("/"+pc.name, body, good); status != 200 || out != "processed" {
			t.Errorf("%s: signed delivery %d %q, want 200 processed", pc.name, status, out)
		}
		if status, out := send("/"+pc.name, body, good); status != 200 || out != "duplicate" {
			t.Errorf("%s: copy %d %q, want 200 duplicate", pc.name, status, out)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != len(providerCases) {
		t.Fatalf("effects %d, want one per provider (%d)", n, len(providerCases))
	}
}

// Slack checks an endpoint with a signed url_verification challenge: it is answered
// with the challenge and recorded nowhere. GitHub's ping, which has no handler, is
// recorded as ignored.
func TestEndpoint_SlackChallengeAnsweredGitHubPingIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	slack, _ := provider.New("slack", provider.Options{Secrets: []string{"slack-secret"}})
	github, _ := provider.New("github", provider.Options{Secrets: []string{"gh-secret"}})
	inbox, err := hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "slack", Verifier: slack}, {Name: "github", Verifier: github}},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	inbox.Handle("github", "issues.opened", countingHandler)

	body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	h, _ := hookinboxtest.Slack("slack-secret").Sign(body, time.Now())
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	req.Header = h
	before := b.tableCounts(t)
	inbox.Endpoint("slack").ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"`) {
		t.Fatalf("challenge answered %d %s", rec.Code, rec.Body)
	}
	if after := b.tableCounts(t); after != before {
		t.Fatalf("the challenge wrote rows:\nbefore %s\nafter  %s", before, after)
	}

	ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	h, _ = hookinboxtest.GitHub("gh-secret").SignEvent(ping, time.Now(), "ping-delivery-1", "ping")
	rec = httptest.NewRecorder()
	req = httptest.NewRequest("POST", "/", bytes.NewReader(ping))
	req.Header = h
	inbox.Endpoint("github").ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get(hookinbox.OutcomeHeader) != "ignored" {
		t.Fatalf("ping answered %d %q, want 200 ignored", rec.Code, rec.Header().Get(hookinbox.OutcomeHeader))
	}
}

// postSigned sends body with the headers h to target and returns the status and the
// outcome header.
func postSigned(t *testing.T, target string, body []byte, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(hookinbox.OutcomeHeader)
}

// The endpoint's verifier vouches that a payload is JSON (provider.Verified.BodyIsJSON)
// and receiving then skips its own check; an event a handler was given, changed and
// received again carries no such word: it is checked, and refused as invalid.
func TestReceive_ChecksAnEventAHandlerChanged(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	stripe, err := provider.New("stripe", provider.Options{Secrets: []string{"whsec_changed"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "stripe", Verifier: stripe}},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	given := make(chan hookinbox.Event, 1)
	inbox.Handle("stripe", "invoice.paid", func(_ context.Context, _ pgx.Tx, ev hookinbox.Event) error {
		given <- ev
		return nil
	})
	body := []byte(`{"id":"evt_changed_1","type":"invoice.paid"}`)
	h, err := hookinboxtest.Stripe("whsec_changed").Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	inbox.Endpoint("stripe").ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("signed delivery: %d %s", rec.Code, rec.Body)
	}
	ev := <-given
	ev.ID, ev.Payload = "evt_changed_2", []byte(`{"id":"evt_changed_2"`)
	before := b.tableCounts(t)
	if _, err := inbox.Receive(b.ctx, ev); !errors.Is(err, hookinbox.ErrInvalidEvent) {
		t.Errorf("Receive of the changed event: %v, want ErrInvalidEvent", err)
	}
	if _, err := inbox.ReceiveBatch(b.ctx, []hookinbox.Event{ev}); !errors.Is(err, hookinbox.ErrInvalidEvent) {
		t.Errorf("ReceiveBatch of the changed event: %v, want ErrInvalidEvent", err)
	}
	if after := b.tableCounts(t); after != before {
		t.Fatalf("the changed event wrote rows:\nbefore %s\nafter  %s", before, after)
	}
}
