package provider_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// Linear publishes no Go library and no example signature; the signature here is
// computed from the definition in Linear's webhook documentation (hex HMAC-SHA256 of
// the raw body under the webhook's signing secret).

const linearDelivery = "234d1a4e-b617-4388-90fe-adc3633d6b72"

// linearBody returns an Issue update signed at at, with irregular spacing.
func linearBody(at time.Time) []byte {
	return []byte(`{"action": "update", "type": "Issue", "createdAt": "2024-01-01T00:00:00.000Z",
  "data": {"id": "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9", "title": "` + testBodyMarker + `"},
  "url": "https://linear.app/x/issue/X-1", "organizationId": "o1", "webhookId": "w1",
  "webhookTimestamp": ` + strconv.FormatInt(at.UnixMilli(), 10) + `}`)
}

func linearHeader(sig, delivery string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("Linear-Signature", sig)
	}
	if delivery != "" {
		h.Set("Linear-Delivery", delivery)
	}
	h.Set("Linear-Event", "Issue")
	return h
}

func linearSigned(secret string, body []byte) http.Header {
	return linearHeader(hexMAC(sha256.New, secret, body), linearDelivery)
}

func newTestLinear(t testing.TB, now func() time.Time, secrets ...string) *provider.Linear {
	t.Helper()
	v, err := provider.NewLinear(provider.LinearConfig{Secrets: secrets, NowFunc: now})
	if err != nil {
		t.Fatalf("NewLinear: %v", err)
	}
	return v
}

func TestLinearNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestLinear(t, fixedNow, testSecret)
	if v.Name() != "linear" || v.RetryWindow() != 24*time.Hour {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestLinearVerifies(t *testing.T) {
	t.Parallel()

	body := linearBody(testNow)
	got, err := newTestLinear(t, fixedNow, testSecret).Verify(linearSigned(testSecret, body), body)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != linearDelivery || got.Type != "Issue.update" || got.SecretIndex != 0 || !got.Timestamp.Equal(testNow) {
		t.Errorf("Verify = %+v", got)
	}
}

func TestLinearRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestLinear(t, fixedNow, testSecret), linearRejections(), testSecret, testBodyMarker)
}

func linearRejections() []rejection {
	body := linearBody(testNow)
	good := hexMAC(sha256.New, testSecret, body)
	h := func(sig string) http.Header { return linearHeader(sig, linearDelivery) }
	signedAt := func(at time.Time) (http.Header, []byte) {
		b := linearBody(at)
		return linearSigned(testSecret, b), b
	}
	oldH, oldB := signedAt(testNow.Add(-provider.DefaultTolerance - time.Second))
	newH, newB := signedAt(testNow.Add(provider.DefaultTolerance + time.Second))
	noTS := []byte(`{"action":"create","type":"Issue","data":{}}`)
	secondsTS := []byte(`{"action":"create","type":"Issue","webhookTimestamp":"1700000000000"}`)
	return []rejection{
		{"no header", http.Header{}, body, provider.ErrMissingSignature},
		{"garbage", h("garbage"), body, provider.ErrNoValidSignature},
		{"wrong secret", linearSigned(otherSecret, body), body, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:63]), body, provider.ErrNoValidSignature},
		{"last digit changed", h(tamper.LastHexChanged(good)), body, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(body, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(body), provider.ErrNoValidSignature},
		{"no webhookTimestamp", linearSigned(testSecret, noTS), noTS, provider.ErrMalformedSignature},
		{"webhookTimestamp a string", linearSigned(testSecret, secondsTS), secondsTS, provider.ErrMalformedSignature},
		{"too old", oldH, oldB, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", newH, newB, provider.ErrTimestampOutOfTolerance},
		{"no delivery id", linearHeader(good, ""), body, provider.ErrUnparsableEvent},
	}
}

func TestLinearTolerance(t *testing.T) {
	t.Parallel()

	v, err := provider.NewLinear(provider.LinearConfig{Secrets: []string{testSecret}, Tolerance: time.Minute, NowFunc: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for skew, wantOK := range map[time.Duration]bool{59 * time.Second: true, -59 * time.Second: true, 61 * time.Second: false, -61 * time.Second: false} {
		body := linearBody(testNow.Add(skew))
		if _, err := v.Verify(linearSigned(testSecret, body), body); (err == nil) != wantOK {
			t.Errorf("tolerance 1m, signed %s from now: %v", skew, err)
		}
	}
}

func TestLinearRotation(t *testing.T) {
	t.Parallel()

	v := newTestLinear(t, fixedNow, otherSecret, testSecret)
	body := linearBody(testNow)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(linearSigned(secret, body), body)
		if err != nil || got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
}

func TestLinearUnparsableEvent(t *testing.T) {
	t.Parallel()

	v := newTestLinear(t, fixedNow, testSecret)
	ms := strconv.FormatInt(testNow.UnixMilli(), 10)
	for _, body := range []string{`{"webhookTimestamp":` + ms + `}`, `{"type":"Issue","action":null,"webhookTimestamp":` + ms + `}`, `[]`} {
		b := []byte(body)
		if _, err := v.Verify(linearSigned(testSecret, b), b); !errors.Is(err, provider.ErrUnparsableEvent) {
			t.Errorf("%s: Verify error %v", body, err)
		}
	}
	b := []byte(`{"type":"Issue","webhookTimestamp":` + ms + `}`)
	if got, err := v.Verify(linearSigned(testSecret, b), b); err != nil || got.Type != "Issue" {
		t.Errorf("no action: %+v, %v", got, err)
	}
}
