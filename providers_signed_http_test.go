package hookinbox_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// signedCase is one of the schemes added with the asymmetric, URL-signed, body-
// timestamped and token schemes, as an endpoint is configured for it, with its
// signers and a body of the provider's shape.
type signedCase struct {
	name    string
	options provider.Options
	// sign signs body at at for a request to target, with the endpoint's key;
	// wrong with another key.
	sign, wrong func(target string, body []byte, at time.Time) http.Header
	// body returns the delivery's body, signed at at where the scheme puts its
	// timestamp in the body (linear).
	body func(at time.Time) []byte
	// timestamped says whether a delivery signed 10 minutes ago is refused.
	timestamped bool
}

// urlSigned adapts a signer to signedCase.sign.
func urlSigned(s hookinboxtest.Signer, id, typ string) func(string, []byte, time.Time) http.Header {
	return func(target string, body []byte, at time.Time) http.Header {
		var h http.Header
		var err error
		switch s := s.(type) {
		case hookinboxtest.URLSigner:
			h, err = s.SignURL(target, body, at)
		case hookinboxtest.EventSigner:
			h, err = s.SignEvent(body, at, id, typ)
		default:
			h, err = s.Sign(body, at)
		}
		if err != nil {
			panic(err)
		}
		return h
	}
}

func signedCases(t *testing.T) []signedCase {
	discordKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	discordOther := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, ed25519.SeedSize))
	sendgridKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sendgridOther, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sendgridPublic, err := hookinboxtest.SendGridPublicKey(sendgridKey)
	if err != nil {
		t.Fatal(err)
	}
	fixed := func(s string) func(time.Time) []byte { return func(time.Time) []byte { return []byte(s) } }
	return []signedCase{
		{
			name: "discord", options: provider.Options{PublicKeys: []string{hookinboxtest.DiscordPublicKey(discordKey)}},
			sign: urlSigned(hookinboxtest.Discord(discordKey), "", ""), wrong: urlSigned(hookinboxtest.Discord(discordOther), "", ""),
			body:        fixed(`{"id":"1200000000000000001","type":2,"token":"t","data":{"name":"` + payloadMarker + `"}}`),
			timestamped: true,
		},
		{
			name: "sendgrid", options: provider.Options{PublicKeys: []string{sendgridPublic}},
			sign: urlSigned(hookinboxtest.SendGrid(sendgridKey), "", ""), wrong: urlSigned(hookinboxtest.SendGrid(sendgridOther), "", ""),
			body:        fixed(`[{"event":"delivered","sg_event_id":"sg-1","email":"` + payloadMarker + `@example.com"}]`),
			timestamped: true,
		},
		{
			name: "twilio", options: provider.Options{Secrets: []string{"twilio-token"}},
			sign: urlSigned(hookinboxtest.Twilio("twilio-token", ""), "", ""), wrong: urlSigned(hookinboxtest.Twilio("other-token", ""), "", ""),
			body: fixed(url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"delivered"}, "Body": {payloadMarker}}.Encode()),
		},
		{
			name: "square", options: provider.Options{Secrets: []string{"square-key"}},
			sign: urlSigned(hookinboxtest.Square("square-key", ""), "", ""), wrong: urlSigned(hookinboxtest.Square("other-key", ""), "", ""),
			body: fixed(`{"event_id":"sq-1","type":"payment.updated","data":{"id":"` + payloadMarker + `"}}`),
		},
		{
			name: "paddle", options: provider.Options{Secrets: []string{"pdl_ntfset_key"}},
			sign: urlSigned(hookinboxtest.Paddle("pdl_ntfset_key"), "", ""), wrong: urlSigned(hookinboxtest.Paddle("pdl_other"), "", ""),
			body:        fixed(`{"event_id":"evt_1","event_type":"transaction.completed","data":{"id":"` + payloadMarker + `"}}`),
			timestamped: true,
		},
		{
			name: "linear", options: provider.Options{Secrets: []string{"linear-secret"}},
			sign:  urlSigned(hookinboxtest.Linear("linear-secret"), "lin-delivery-1", "Issue.create"),
			wrong: urlSigned(hookinboxtest.Linear("other-secret"), "lin-delivery-1", "Issue.create"),
			body: func(at time.Time) []byte {
				return []byte(`{"action":"create","type":"Issue","data":{"title":"` + payloadMarker + `"},"webhookTimestamp":` + strconv.FormatInt(at.UnixMilli(), 10) + `}`)
			},
			timestamped: true,
		},
		{
			name: "zoom", options: provider.Options{Secrets: []string{"zoom-secret"}},
			sign: urlSigned(hookinboxtest.Zoom("zoom-secret"), "", ""), wrong: urlSigned(hookinboxtest.Zoom("other-secret"), "", ""),
			body:        fixed(`{"event":"meeting.started","event_ts":1700000000000,"payload":{"object":{"topic":"` + payloadMarker + `"}}}`),
			timestamped: true,
		},
		{
			name: "gitlab", options: provider.Options{Secrets: []string{"gitlab-token"}},
			sign:  urlSigned(hookinboxtest.GitLab("gitlab-token"), "gl-uuid-1", "Push Hook"),
			wrong: urlSigned(hookinboxtest.GitLab("other-token"), "gl-uuid-1", "Push Hook"),
			body:  fixed(`{"object_kind":"push","project":{"name":"` + payloadMarker + `"}}`),
		},
	}
}

// Every new scheme through HTTP on PostgreSQL: a signed delivery is stored once and
// its copy is a duplicate; no signature, another key, a changed body and (for the
// timestamped schemes) a delivery signed outside the window are refused with 4xx
// and write nothing.
func TestEndpoint_SignedSchemesStoreOnceAndRefuseWithoutWriting(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	cases := signedCases(t)
	var endpoints []hookinbox.EndpointConfig
	for _, sc := range cases {
		v, err := provider.New(sc.name, sc.options)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		endpoints = append(endpoints, hookinbox.EndpointConfig{Name: sc.name, Verifier: v})
	}
	inbox, err := hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{Endpoints: endpoints, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, sc := range cases {
		inbox.Handle(sc.name, "*", countingHandler)
		mux.Handle("/"+sc.name, inbox.Endpoint(sc.name))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	send := func(target string, body []byte, h http.Header) (int, string) { return postSigned(t, target, body, h) }
	for _, sc := range cases {
		target := srv.URL + "/" + sc.name
		now := time.Now()
		body := sc.body(now)
		changed := bytes.Replace(body, []byte(payloadMarker), []byte(strings.ToUpper(payloadMarker)), 1)
		refusals := []struct {
			what string
			body []byte
			h    http.Header
		}{
			{"no signature", body, http.Header{}},
			{"wrong key", body, sc.wrong(target, body, now)},
			{"one byte changed", changed, sc.sign(target, body, now)},
		}
		if sc.name == "gitlab" {
			// GitLab's token covers no body: a changed body cannot be told apart.
			refusals = refusals[:2]
		}
		if sc.timestamped {
			stale := now.Add(-10 * time.Minute)
			staleBody := sc.body(stale)
			refusals = append(refusals, struct {
				what string
				body []byte
				h    http.Header
			}{"outside the timestamp window", staleBody, sc.sign(target, staleBody, stale)})
		}
		for _, refused := range refusals {
			before := b.tableCounts(t)
			status, _ := send(target, refused.body, refused.h)
			if status != 400 && status != 401 {
				t.Errorf("%s, %s: status %d, want 400 or 401", sc.name, refused.what, status)
			}
			if after := b.tableCounts(t); after != before {
				t.Errorf("%s, %s: wrote rows\nbefore %s\nafter  %s", sc.name, refused.what, before, after)
			}
		}
		if status, out := send(target, body, sc.sign(target, body, now)); status != 200 || out != "processed" {
			t.Errorf("%s: signed delivery %d %q, want 200 processed", sc.name, status, out)
		}
		// The provider's retry: signed again, later, the same event.
		retryAt := now.Add(time.Second)
		retry := sc.body(retryAt)
		if status, out := send(target, retry, sc.sign(target, retry, retryAt)); status != 200 || out != "duplicate" {
			t.Errorf("%s: retry %d %q, want 200 duplicate", sc.name, status, out)
		}
		if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE endpoint = $1`, sc.name); n != 1 {
			t.Errorf("%s: %d receipts, want 1", sc.name, n)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM test_effects`); n != len(cases) {
		t.Fatalf("effects %d, want one per provider (%d)", n, len(cases))
	}
	// Twilio's form is stored as the JSON of its parameters.
	var payload string
	if err := b.db.Pool.QueryRow(t.Context(), `SELECT payload::text FROM hookinbox_inbox WHERE endpoint = 'twilio'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, `"MessageStatus": "delivered"`) {
		t.Errorf("twilio payload %s", payload)
	}
}

// Discord's PING and Zoom's url_validation are answered through provider.Challenger
// and recorded nowhere; an unsigned one is refused.
func TestEndpoint_DiscordPingAndZoomValidationAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, ed25519.SeedSize))
	discord, err := provider.New("discord", provider.Options{PublicKeys: []string{hookinboxtest.DiscordPublicKey(key)}})
	if err != nil {
		t.Fatal(err)
	}
	zoom, err := provider.New("zoom", provider.Options{Secrets: []string{"zoom-old", "zoom-new"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "discord", Verifier: discord}, {Name: "zoom", Verifier: zoom}},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(endpoint string, body []byte, h http.Header) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		req.Header = h
		inbox.Endpoint(endpoint).ServeHTTP(rec, req)
		return rec
	}
	before := b.tableCounts(t)

	ping := []byte(`{"id":"1","application_id":"2","type":1,"token":"t","version":1}`)
	h, _ := hookinboxtest.Discord(key).Sign(ping, time.Now())
	if rec := serve("discord", ping, h); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"type":1}` {
		t.Errorf("PING answered %d %s, want 200 {\"type\":1}", rec.Code, rec.Body)
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{6}, ed25519.SeedSize))
	h, _ = hookinboxtest.Discord(other).Sign(ping, time.Now())
	if rec := serve("discord", ping, h); rec.Code != 401 {
		t.Errorf("PING by another key answered %d", rec.Code)
	}

	validation := []byte(`{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`)
	h, _ = hookinboxtest.Zoom("zoom-new").Sign(validation, time.Now())
	rec := serve("zoom", validation, h)
	// encryptedToken under zoom-new, the secret that signed: hex HMAC-SHA256.
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"plainToken":"qgg8vlvZRS6UYooatFL8Aw"`) || !strings.Contains(rec.Body.String(), `"encryptedToken":"`) {
		t.Errorf("url_validation answered %d %s", rec.Code, rec.Body)
	}
	if after := b.tableCounts(t); after != before {
		t.Fatalf("challenges wrote rows:\nbefore %s\nafter  %s", before, after)
	}
}

// Behind a proxy the URL the receiver sees is not the one Twilio or Square signed:
// with public_url the endpoint verifies against the URL the provider called.
func TestEndpoint_URLSignedBehindAProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noBilling: true})
	const public = "https://hooks.example.com/webhooks/square"
	withURL, err := provider.New("square", provider.Options{Secrets: []string{"sq"}, Params: map[string]string{"public_url": public}})
	if err != nil {
		t.Fatal(err)
	}
	withoutURL, err := provider.New("square", provider.Options{Secrets: []string{"sq"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "proxied", Verifier: withURL}, {Name: "direct", Verifier: withoutURL}},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"event_id":"sq-proxy-1","type":"payment.created","data":{}}`)
	h, err := hookinboxtest.Square("sq", public).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for endpoint, want := range map[string]int{"direct": 401, "proxied": 200} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://10.0.0.7:8080/square", bytes.NewReader(body))
		req.Header = h
		inbox.Endpoint(endpoint).ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("%s: %d %s, want %d", endpoint, rec.Code, rec.Body, want)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 1 {
		t.Errorf("%d receipts, want 1", n)
	}
}
