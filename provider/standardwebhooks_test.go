package provider_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

const (
	// swVectorSecret, swVectorID, swVectorTimestamp, swVectorBody and swVectorSignature
	// are the Standard Webhooks specification's published example.
	swVectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swVectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swVectorTimestamp = 1614265330
	swVectorBody      = `{"test": 2432232314}`
	swVectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

	// swSecret and swOtherSecret are Standard Webhooks secrets: whsec_ and base64.
	swSecret      = swVectorSecret
	swOtherSecret = "whsec_aG9va2luYm94LW90aGVyLWtleS0yMDI0"

	swID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f1W"
)

// swBody is a Svix-style event with irregular spacing, so that re-serializing it
// changes its bytes.
var swBody = []byte(`{"type": "invoice.paid",  "timestamp": "2024-01-01T00:00:00Z",
  "data": {"id": "in_1", "note": "` + testBodyMarker + `"}}`)

// swSign returns the Standard Webhooks signature ("v1,<base64>") of id, at and
// body, computed from the specification: the HMAC-SHA256 of "<id>.<unix>.<body>"
// under the key the secret encodes (base64 after whsec_). internal/oracle checks that
// the official libraries sign the same.
func swSign(t testing.TB, secret, id string, at time.Time, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	return "v1," + base64MAC(sha256.New, string(key), []byte(id+"."+unix(at)+"."), body)
}

// swHeader returns the three headers under prefix ("webhook" or "svix"), leaving out
// the empty ones.
func swHeader(prefix, id, ts, sig string) http.Header {
	h := http.Header{}
	for name, value := range map[string]string{"-id": id, "-timestamp": ts, "-signature": sig} {
		if value != "" {
			h.Set(prefix+name, value)
		}
	}
	return h
}

func unix(at time.Time) string { return strconv.FormatInt(at.Unix(), 10) }

func newTestStandardWebhooks(t testing.TB, now time.Time, secrets ...string) *provider.StandardWebhooks {
	t.Helper()
	s, err := provider.NewStandardWebhooks(provider.StandardWebhooksConfig{
		Secrets: secrets,
		NowFunc: func() time.Time { return now },
	})
	if err != nil {
		t.Fatalf("NewStandardWebhooks: %v", err)
	}
	return s
}

func TestStandardWebhooksNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestStandardWebhooks(t, testNow, swSecret)
	if got := v.Name(); got != "standardwebhooks" {
		t.Errorf("Name() = %q, want %q", got, "standardwebhooks")
	}
	if got := v.RetryWindow(); got != 72*time.Hour {
		t.Errorf("RetryWindow() = %s, want 72h", got)
	}
	v, err := provider.New("standardwebhooks", provider.Options{Secrets: []string{swSecret}, Params: map[string]string{"retry_window": "30h"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.RetryWindow(); got != 30*time.Hour {
		t.Errorf("RetryWindow() with retry_window 30h = %s", got)
	}
}

// TestNewSvix checks that provider svix, as a config selects it, is the Standard
// Webhooks verifier: it accepts the scheme under svix-* headers (and webhook-* ones),
// takes retry_window, and is named standardwebhooks, so that an endpoint's receipt
// keys do not change when its config says svix instead. (internal/oracle checks it
// with what the Svix library signs.)
func TestNewSvix(t *testing.T) {
	t.Parallel()

	v, err := provider.New("svix", provider.Options{
		Secrets: []string{swOtherSecret, swSecret}, NowFunc: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("New(svix): %v", err)
	}
	if _, ok := v.(*provider.StandardWebhooks); !ok || v.Name() != "standardwebhooks" || v.RetryWindow() != 72*time.Hour {
		t.Errorf("New(svix) = %T named %q, retry window %s; want *provider.StandardWebhooks, standardwebhooks, 72h",
			v, v.Name(), v.RetryWindow())
	}
	for _, prefix := range []string{"svix", "webhook"} {
		h := swHeader(prefix, swID, unix(testNow), swSign(t, swSecret, swID, testNow, swBody))
		got, err := v.Verify(h, swBody)
		if err != nil {
			t.Fatalf("%s-* headers: Verify: %v", prefix, err)
		}
		if got.ID != swID || got.Type != "invoice.paid" || got.SecretIndex != 1 || !got.Timestamp.Equal(testNow) {
			t.Errorf("%s-* headers: Verify = %+v", prefix, got)
		}
	}
	h := swHeader("svix", swID, unix(testNow), swSign(t, swSecret, swID, testNow, swBody))
	if _, err := v.Verify(h, tamper.OneByteChanged(swBody, testBodyMarker)); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("svix-* headers, body changed: Verify error = %v, want %v", err, provider.ErrNoValidSignature)
	}

	v, err = provider.New("svix", provider.Options{Secrets: []string{swSecret}, Params: map[string]string{"retry_window": "30h"}})
	if err != nil || v.RetryWindow() != 30*time.Hour {
		t.Errorf("New(svix) with retry_window 30h = %v, %v", v, err)
	}
	_, err = provider.New("svix", provider.Options{Secrets: []string{swSecret}, Params: map[string]string{"retry_window": "a day"}})
	if err == nil || !strings.Contains(err.Error(), "provider svix") {
		t.Errorf("New(svix) with a bad retry_window: error = %v, want one naming svix as configured", err)
	}
}

// TestStandardWebhooksPublishedVector checks the specification's example. Its body
// has no "type", so Verify refuses the event after the signature matched:
// ErrUnparsableEvent, where a signature mismatch would be ErrNoValidSignature.
func TestStandardWebhooksPublishedVector(t *testing.T) {
	t.Parallel()

	at := time.Unix(swVectorTimestamp, 0)
	body := []byte(swVectorBody)
	if got := swSign(t, swVectorSecret, swVectorID, at, body); got != swVectorSignature {
		t.Fatalf("the test's signature = %s, want the published %s", got, swVectorSignature)
	}

	s := newTestStandardWebhooks(t, at, swVectorSecret)
	ts := strconv.Itoa(swVectorTimestamp)
	_, err := s.Verify(swHeader("webhook", swVectorID, ts, swVectorSignature), body)
	if !errors.Is(err, provider.ErrUnparsableEvent) || !strings.Contains(err.Error(), "no type") {
		t.Errorf("Verify(published vector) error = %v, want %v for a missing type (signature accepted)", err, provider.ErrUnparsableEvent)
	}
	_, err = s.Verify(swHeader("webhook", swVectorID, ts, tamper.LastBase64Changed(swVectorSignature)), body)
	if !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("Verify(vector with a character changed) error = %v, want %v", err, provider.ErrNoValidSignature)
	}
}

func TestStandardWebhooksRejects(t *testing.T) {
	t.Parallel()

	ts := unix(testNow)
	good := swSign(t, swSecret, swID, testNow, swBody)
	h := func(sig string) http.Header { return swHeader("webhook", swID, ts, sig) }
	signedAt := func(at time.Time) http.Header {
		return swHeader("webhook", swID, unix(at), swSign(t, swSecret, swID, at, swBody))
	}
	twoSigs := h(good)
	twoSigs.Add("webhook-signature", good)
	twoIDs := h(good)
	twoIDs.Add("webhook-id", swID)

	testRejections(t, newTestStandardWebhooks(t, testNow, swSecret), []rejection{
		{"no header", http.Header{}, swBody, provider.ErrMissingSignature},
		{"nil header", nil, swBody, provider.ErrMissingSignature},
		{"no signature", h(""), swBody, provider.ErrMissingSignature},
		{"no id", swHeader("webhook", "", ts, good), swBody, provider.ErrMissingSignature},
		{"no timestamp", swHeader("webhook", swID, "", good), swBody, provider.ErrMissingSignature},
		{"two signature headers", twoSigs, swBody, provider.ErrMalformedSignature},
		{"two id headers", twoIDs, swBody, provider.ErrMalformedSignature},
		{"garbage", h("garbage"), swBody, provider.ErrMalformedSignature},
		{"header too long", h(good + " v1," + strings.Repeat("A", 8<<10)), swBody, provider.ErrMalformedSignature},
		{"too many signatures", h(strings.Repeat("v1,AAAA ", 32) + good), swBody, provider.ErrMalformedSignature},
		{"timestamp not a number", swHeader("webhook", swID, "soon", good), swBody, provider.ErrMalformedSignature},
		{"timestamp signed", swHeader("webhook", swID, "+"+ts, good), swBody, provider.ErrMalformedSignature},
		{"timestamp overflows", swHeader("webhook", swID, "99999999999999999999", good), swBody, provider.ErrMalformedSignature},
		{"wrong secret", h(swSign(t, swOtherSecret, swID, testNow, swBody)), swBody, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:30]), swBody, provider.ErrNoValidSignature},
		{"padding dropped", h(strings.TrimRight(good, "=")), swBody, provider.ErrNoValidSignature},
		{"last character changed", h(tamper.LastBase64Changed(good)), swBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(swBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(swBody), provider.ErrNoValidSignature},
		{"empty body", h(good), nil, provider.ErrNoValidSignature},
		{"signature for another id", swHeader("webhook", "msg_other", ts, good), swBody, provider.ErrNoValidSignature},
		{"signature for another timestamp", swHeader("webhook", swID, unix(testNow.Add(time.Second)), good), swBody, provider.ErrNoValidSignature},
		{"unknown version alone (v1a)", h("v1a," + good[3:]), swBody, provider.ErrNoValidSignature},
		{"unknown version alone (v2)", h("v2," + good[3:]), swBody, provider.ErrNoValidSignature},
		{"only spaces", h("   "), swBody, provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), swBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), swBody, provider.ErrTimestampOutOfTolerance},
	}, swSecret, strings.TrimPrefix(swSecret, "whsec_"), testBodyMarker)
}

func TestStandardWebhooksAcceptsOneBadOneGoodSignature(t *testing.T) {
	t.Parallel()

	s := newTestStandardWebhooks(t, testNow, swSecret)
	sig := swSign(t, swOtherSecret, swID, testNow, swBody) + " " + swSign(t, swSecret, swID, testNow, swBody)
	if _, err := s.Verify(swHeader("webhook", swID, unix(testNow), sig), swBody); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestStandardWebhooksRotation(t *testing.T) {
	t.Parallel()

	s := newTestStandardWebhooks(t, testNow, swOtherSecret, swSecret)
	for i, secret := range []string{swOtherSecret, swSecret} {
		got, err := s.Verify(swHeader("webhook", swID, unix(testNow), swSign(t, secret, swID, testNow, swBody)), swBody)
		if err != nil {
			t.Fatalf("secret %d: Verify: %v", i, err)
		}
		if got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex = %d", i, got.SecretIndex)
		}
	}
}

// TestStandardWebhooksHeaderSets checks that the webhook-* set wins when present and
// the two sets are never mixed.
func TestStandardWebhooksHeaderSets(t *testing.T) {
	t.Parallel()

	s := newTestStandardWebhooks(t, testNow, swSecret)
	ts := unix(testNow)
	good := swSign(t, swSecret, swID, testNow, swBody)

	both := swHeader("webhook", swID, ts, good)
	for k, v := range swHeader("svix", "msg_other", ts, "v1,AAAA") {
		both[k] = v
	}
	if got, err := s.Verify(both, swBody); err != nil || got.ID != swID {
		t.Errorf("both sets: Verify = %+v, %v, want the webhook-* set verified", got, err)
	}

	mixed := swHeader("webhook", swID, "", "")
	for k, v := range swHeader("svix", "", ts, good) {
		mixed[k] = v
	}
	if _, err := s.Verify(mixed, swBody); !errors.Is(err, provider.ErrMissingSignature) {
		t.Errorf("webhook-id with svix-timestamp and svix-signature: Verify error = %v, want %v", err, provider.ErrMissingSignature)
	}
}

func TestNewStandardWebhooksSecrets(t *testing.T) {
	t.Parallel()

	unprefixed := strings.TrimPrefix(swSecret, "whsec_")
	s := newTestStandardWebhooks(t, testNow, unprefixed)
	if _, err := s.Verify(swHeader("webhook", swID, unix(testNow), swSign(t, swSecret, swID, testNow, swBody)), swBody); err != nil {
		t.Errorf("secret without whsec_: Verify: %v", err)
	}

	for _, secret := range []string{"whsec_", "whsec_not base64!", "whsec_" + unprefixed[:len(unprefixed)-1], "not_base64_either"} {
		_, err := provider.NewStandardWebhooks(provider.StandardWebhooksConfig{Secrets: []string{swSecret, secret}})
		if err == nil {
			t.Errorf("NewStandardWebhooks(%q) succeeded", secret)
			continue
		}
		checkErrorHides(t, err, secret, unprefixed)
		if !strings.Contains(err.Error(), "secret 1") {
			t.Errorf("error %q does not name secret 1", err)
		}
	}
	if _, err := provider.NewStandardWebhooks(provider.StandardWebhooksConfig{Secrets: []string{swSecret}, RetryWindow: -time.Hour}); err == nil {
		t.Errorf("negative retry window accepted")
	}
}

func TestStandardWebhooksUnparsableEvent(t *testing.T) {
	t.Parallel()

	s := newTestStandardWebhooks(t, testNow, swSecret)
	for body, wantText := range map[string]string{
		`{"data":{}}`:             "no type",
		`{"type":""}`:             "no type",
		`{"type":["a"]}`:          "type is not a string",
		`{"Type":"invoice.paid"}`: "no type",
		`[]`:                      "not a JSON object",
		`x`:                       "not a JSON object",
	} {
		b := []byte(body)
		_, err := s.Verify(swHeader("webhook", swID, unix(testNow), swSign(t, swSecret, swID, testNow, b)), b)
		if !errors.Is(err, provider.ErrUnparsableEvent) || !strings.Contains(err.Error(), wantText) {
			t.Errorf("body %s: Verify error = %v, want %v mentioning %q", body, err, provider.ErrUnparsableEvent, wantText)
		}
	}
}
