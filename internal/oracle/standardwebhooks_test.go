package oracle_test

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	svix "github.com/svix/svix-webhooks/go"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

const (
	// swSecret (the specification's example) and swOtherSecret are Standard Webhooks
	// secrets: whsec_ and base64.
	swSecret      = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swOtherSecret = "whsec_aG9va2luYm94LW90aGVyLWtleS0yMDI0"

	swID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f1W"

	// fuzzSWSecret signs the Standard Webhooks fuzz seeds, as in provider's tests.
	fuzzSWSecret = "whsec_ZnV6ei1zZWNyZXQ="
)

// swBody is a Svix-style event with irregular spacing.
var swBody = []byte(`{"type": "invoice.paid",  "timestamp": "2024-01-01T00:00:00Z",
  "data": {"id": "in_1", "note": "` + testBodyMarker + `"}}`)

// swSign and svixSign return each library's signature ("v1,<base64>").
func swSign(t testing.TB, secret, id string, at time.Time, body []byte) string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("standardwebhooks.NewWebhook: %v", err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatalf("standardwebhooks Sign: %v", err)
	}
	return sig
}

func svixSign(t testing.TB, secret, id string, at time.Time, body []byte) string {
	t.Helper()
	wh, err := svix.NewWebhook(secret)
	if err != nil {
		t.Fatalf("svix.NewWebhook: %v", err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatalf("svix Sign: %v", err)
	}
	return sig
}

// swHeader returns the three headers under prefix ("webhook" or "svix"), leaving out
// the empty ones.
func swHeader(prefix, id, ts, sig string) http.Header {
	return headers(prefix+"-id", id, prefix+"-timestamp", ts, prefix+"-signature", sig)
}

func unix(at time.Time) string { return strconv.FormatInt(at.Unix(), 10) }

// librariesAccept reports the verdicts of the Standard Webhooks and Svix libraries,
// ignoring the timestamp's distance from the real clock.
func librariesAccept(t testing.TB, h http.Header, body []byte, secret string) (standard, svixErr error) {
	t.Helper()
	sw, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := svix.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return sw.VerifyIgnoringTimestamp(body, h), sv.VerifyIgnoringTimestamp(body, h)
}

func newStandardWebhooks(t testing.TB, secrets ...string) *provider.StandardWebhooks {
	t.Helper()
	s, err := provider.NewStandardWebhooks(provider.StandardWebhooksConfig{Secrets: secrets, NowFunc: fixedNow})
	if err != nil {
		t.Fatalf("NewStandardWebhooks: %v", err)
	}
	return s
}

// The library signs the specification's published example as published; provider's
// tests verify it.
func TestStandardWebhooks_PublishedVectorSignedByLibrary(t *testing.T) {
	t.Parallel()

	if got, want := swSign(t, swSecret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)),
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("the library's signature = %s, want the published %s", got, want)
	}
}

// TestStandardWebhooks_VerifiesLibrarySignatures signs with each official library and
// verifies with ours, under the header names each library reads.
func TestStandardWebhooks_VerifiesLibrarySignatures(t *testing.T) {
	t.Parallel()

	s := newStandardWebhooks(t, swSecret)
	for _, tt := range []struct {
		library, prefix string
		sign            func(testing.TB, string, string, time.Time, []byte) string
	}{
		{"standard-webhooks", "webhook", swSign},
		{"svix", "svix", svixSign},
		{"svix under webhook-*", "webhook", svixSign},
	} {
		h := swHeader(tt.prefix, swID, unix(testNow), tt.sign(t, swSecret, swID, testNow, swBody))
		got, err := s.Verify(h, swBody)
		if err != nil {
			t.Fatalf("%s: Verify: %v", tt.library, err)
		}
		if got.ID != swID || got.Type != "invoice.paid" || !bytes.Equal(got.Body, swBody) ||
			got.SecretIndex != 0 || !got.Timestamp.Equal(testNow) {
			t.Errorf("%s: Verify = %+v", tt.library, got)
		}
	}
}

// Provider svix, as a config selects it, accepts what the Svix library signs under
// svix-* headers (and webhook-* ones), with the secret that signed, and refuses the
// body changed.
func TestSvix_VerifiesSvixLibrarySignature(t *testing.T) {
	t.Parallel()

	v, err := provider.New("svix", provider.Options{Secrets: []string{swOtherSecret, swSecret}, NowFunc: fixedNow})
	if err != nil {
		t.Fatalf("New(svix): %v", err)
	}
	for _, prefix := range []string{"svix", "webhook"} {
		h := swHeader(prefix, swID, unix(testNow), svixSign(t, swSecret, swID, testNow, swBody))
		got, err := v.Verify(h, swBody)
		if err != nil {
			t.Fatalf("%s-* headers signed by the svix library: Verify: %v", prefix, err)
		}
		if got.ID != swID || got.Type != "invoice.paid" || got.SecretIndex != 1 || !got.Timestamp.Equal(testNow) {
			t.Errorf("%s-* headers: Verify = %+v", prefix, got)
		}
	}
	h := swHeader("svix", swID, unix(testNow), svixSign(t, swSecret, swID, testNow, swBody))
	if _, err := v.Verify(h, tamper.OneByteChanged(swBody, testBodyMarker)); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("svix-signed body changed: Verify error = %v, want %v", err, provider.ErrNoValidSignature)
	}
}

// TestStandardWebhooks_VerifierAgreesWithLibraries cross-checks verdicts with both
// libraries. They differ only where hookinbox is deliberately stricter (it refuses a
// signature header with an element that is not version,signature, and a v1 value
// with a second comma, which the libraries skip or truncate) and where the libraries
// differ among themselves (the standard-webhooks library reads only webhook-*).
func TestStandardWebhooks_VerifierAgreesWithLibraries(t *testing.T) {
	t.Parallel()

	s := newStandardWebhooks(t, swSecret)
	ts := unix(testNow)
	good := swSign(t, swSecret, swID, testNow, swBody)
	wrong := swSign(t, swOtherSecret, swID, testNow, swBody)
	h := func(sig string) http.Header { return swHeader("webhook", swID, ts, sig) }
	mixed := swHeader("webhook", swID, ts, "")
	mixed.Set("svix-signature", good)

	tests := []struct {
		name         string
		header       http.Header
		body         []byte
		wantOurs     bool
		wantStandard bool
		wantSvix     bool
	}{
		{"good", h(good), swBody, true, true, true},
		{"bad then good", h(wrong + " " + good), swBody, true, true, true},
		{"v1a then good", h("v1a,c2lnbmF0dXJl " + good), swBody, true, true, true},
		{"leading zero in timestamp", swHeader("webhook", swID, "0"+ts, good), swBody, true, true, true},
		{"svix headers", swHeader("svix", swID, ts, good), swBody, true, false, true},
		{"wrong secret", h(wrong), swBody, false, false, false},
		{"truncated", h(good[:24]), swBody, false, false, false},
		{"last character changed", h(tamper.LastBase64Changed(good)), swBody, false, false, false},
		{"body changed", h(good), tamper.OneByteChanged(swBody, testBodyMarker), false, false, false},
		{"body re-serialized", h(good), tamper.Reserialized(swBody), false, false, false},
		{"v2 only", h("v2," + good[3:]), swBody, false, false, false},
		{"signature for another id", swHeader("webhook", swID+"x", ts, good), swBody, false, false, false},
		{"mixed header sets", mixed, swBody, false, false, false},
		{"element without comma, then good", h("v1 " + good), swBody, false, true, true},
		{"good with a trailing field", h(good + ",extra"), swBody, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, ours := s.Verify(tt.header, tt.body)
			standard, svixErr := librariesAccept(t, tt.header, tt.body, swSecret)
			if (ours == nil) != tt.wantOurs || (standard == nil) != tt.wantStandard || (svixErr == nil) != tt.wantSvix {
				t.Errorf("ours: %v, standard-webhooks: %v, svix: %v, want ok %t, %t, %t",
					ours, standard, svixErr, tt.wantOurs, tt.wantStandard, tt.wantSvix)
			}
		})
	}
}

// TestHMAC_AsStandardWebhooksVerifiesLibrarySignature checks the generic scheme,
// configured as Standard Webhooks with one signature, against the library's signer.
// The key is the decoded whsec_ secret, since the generic scheme uses secrets as they
// are.
func TestHMAC_AsStandardWebhooksVerifiesLibrarySignature(t *testing.T) {
	t.Parallel()

	v, err := provider.New("hmac", provider.Options{Secrets: []string{"hookinbox-other-key-2024"}, NowFunc: fixedNow, Params: map[string]string{
		"header": "Webhook-Signature", "prefix": "v1,", "encoding": "base64",
		"timestamp_header": "Webhook-Timestamp", "id_header": "Webhook-Id",
		"signed_payload": "{id}.{timestamp}.{body}",
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Verify(swHeader("webhook", swID, unix(testNow), swSign(t, swOtherSecret, swID, testNow, swBody)), swBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != swID || got.Type != "invoice.paid" {
		t.Errorf("ID, Type = %q, %q", got.ID, got.Type)
	}
}

// Both official libraries accept what the signers sign, under each secret of a
// rotation.
func TestStandardWebhooks_SignerAcceptedByLibraries(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"msg_1","type":"invoice.paid","data":{}}`)
	unprefixed := strings.TrimPrefix(swOtherSecret, "whsec_")
	standard, err := hookinboxtest.StandardWebhooks(swSecret, unprefixed).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	svixed, err := hookinboxtest.Svix(swSecret, unprefixed).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if standard.Get("webhook-id") != "msg_1" || svixed.Get("svix-id") != "msg_1" || svixed.Get("webhook-id") != "" {
		t.Errorf("headers = %v and %v", standard, svixed)
	}
	for _, secret := range []string{swSecret, swOtherSecret} {
		sw, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Verify(body, standard); err != nil {
			t.Errorf("standard-webhooks library, secret %s: %v", secret, err)
		}
		sv, err := svix.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]http.Header{"webhook-*": standard, "svix-*": svixed} {
			if err := sv.Verify(body, h); err != nil {
				t.Errorf("svix library, %s headers, secret %s: %v", name, secret, err)
			}
		}
	}
}
