package provider_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// Zoom publishes no Go library and no example signature with its secret; the
// signatures here are computed from the definition in Zoom's "Using webhooks"
// documentation: "v0=" and the hex HMAC-SHA256 of "v0:{timestamp}:{body}", and
// encryptedToken the hex HMAC-SHA256 of plainToken.

var zoomBody = []byte(`{"event": "meeting.started", "event_ts": 1626230691572,
  "payload": {"account_id": "AAAAAABBBB", "object": {"id": "1234567890", "topic": "` + testBodyMarker + `"}}}`)

func zoomSignature(secret, ts string, body []byte) string {
	return "v0=" + hexMAC(sha256.New, secret, []byte("v0:"+ts+":"), body)
}

func zoomHeader(ts, sig string) http.Header {
	h := http.Header{}
	if ts != "" {
		h.Set("x-zm-request-timestamp", ts)
	}
	if sig != "" {
		h.Set("x-zm-signature", sig)
	}
	return h
}

func zoomSigned(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return zoomHeader(ts, zoomSignature(secret, ts, body))
}

func newTestZoom(t testing.TB, now func() time.Time, secrets ...string) *provider.Zoom {
	t.Helper()
	v, err := provider.NewZoom(provider.ZoomConfig{Secrets: secrets, NowFunc: now})
	if err != nil {
		t.Fatalf("NewZoom: %v", err)
	}
	return v
}

func TestZoomNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestZoom(t, fixedNow, testSecret)
	if v.Name() != "zoom" || v.RetryWindow() != 24*time.Hour {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestZoomVerifies(t *testing.T) {
	t.Parallel()

	got, err := newTestZoom(t, fixedNow, testSecret).Verify(zoomSigned(testSecret, testNow, zoomBody), zoomBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	sum := sha256.Sum256(zoomBody)
	if got.ID != "meeting.started:1626230691572:"+hex.EncodeToString(sum[:])[:32] || got.Type != "meeting.started" || !got.Timestamp.Equal(testNow) {
		t.Errorf("Verify = %+v", got)
	}
	// A retry, signed later with the same body, has the same id.
	retry, err := newTestZoom(t, fixedNow, testSecret).Verify(zoomSigned(testSecret, testNow.Add(time.Minute), zoomBody), zoomBody)
	if err != nil || retry.ID != got.ID {
		t.Errorf("retry: %+v, %v", retry, err)
	}
}

func TestZoomRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestZoom(t, fixedNow, testSecret), zoomRejections(), testSecret, testBodyMarker)
}

func zoomRejections() []rejection {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := zoomSignature(testSecret, ts, zoomBody)
	h := func(sig string) http.Header { return zoomHeader(ts, sig) }
	signedAt := func(at time.Time) http.Header { return zoomSigned(testSecret, at, zoomBody) }
	return []rejection{
		{"no header", http.Header{}, zoomBody, provider.ErrMissingSignature},
		{"no timestamp", zoomHeader("", good), zoomBody, provider.ErrMissingSignature},
		{"garbage", h("garbage"), zoomBody, provider.ErrMalformedSignature},
		{"timestamp not a number", zoomHeader("soon", good), zoomBody, provider.ErrMalformedSignature},
		{"wrong secret", zoomSigned(otherSecret, testNow, zoomBody), zoomBody, provider.ErrNoValidSignature},
		{"v1", h("v1=" + good[3:]), zoomBody, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:60]), zoomBody, provider.ErrNoValidSignature},
		{"last digit changed", h(tamper.LastHexChanged(good)), zoomBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(zoomBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(zoomBody), provider.ErrNoValidSignature},
		{"signature for another timestamp", zoomHeader(strconv.FormatInt(testNow.Unix()+1, 10), good), zoomBody, provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), zoomBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), zoomBody, provider.ErrTimestampOutOfTolerance},
	}
}

func TestZoomRotation(t *testing.T) {
	t.Parallel()

	v := newTestZoom(t, fixedNow, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(zoomSigned(secret, testNow, zoomBody), zoomBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
}

// The url_validation challenge is answered with the token encrypted by the secret
// that verified the request: during a rotation, the one Zoom used.
func TestZoomURLValidation(t *testing.T) {
	t.Parallel()

	v := newTestZoom(t, fixedNow, otherSecret, testSecret)
	body := []byte(`{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`)
	got, err := v.Verify(zoomSigned(testSecret, testNow, body), body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != "endpoint.url_validation" || got.ID != "endpoint.url_validation:qgg8vlvZRS6UYooatFL8Aw" {
		t.Errorf("ID, Type = %q, %q", got.ID, got.Type)
	}
	var c provider.Challenger = v
	response, ok := c.Challenge(got)
	var answer map[string]string
	if !ok || json.Unmarshal(response, &answer) != nil || len(answer) != 2 {
		t.Fatalf("Challenge = %s, %t", response, ok)
	}
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte("qgg8vlvZRS6UYooatFL8Aw"))
	if answer["plainToken"] != "qgg8vlvZRS6UYooatFL8Aw" || answer["encryptedToken"] != hex.EncodeToString(mac.Sum(nil)) {
		t.Errorf("Challenge = %s", response)
	}
	event, _ := v.Verify(zoomSigned(testSecret, testNow, zoomBody), zoomBody)
	if response, ok := c.Challenge(event); ok || response != nil {
		t.Errorf("Challenge(meeting.started) = %s, %t", response, ok)
	}
	if _, err := v.Verify(zoomSigned("unknown", testNow, body), body); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("unsigned url_validation: %v", err)
	}
}

func TestZoomUnparsableEvent(t *testing.T) {
	t.Parallel()

	v := newTestZoom(t, fixedNow, testSecret)
	for _, body := range []string{`{"event_ts":1}`, `{"event":"meeting.started"}`, `{"event":"endpoint.url_validation","payload":{}}`, `[]`} {
		b := []byte(body)
		if _, err := v.Verify(zoomSigned(testSecret, testNow, b), b); !errors.Is(err, provider.ErrUnparsableEvent) || strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s: Verify error %v", body, err)
		}
	}
}
