package provider_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// Test keys from fixed seeds, so that failures reproduce.
var (
	discordKey      = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	discordOtherKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
)

func discordPublic(k ed25519.PrivateKey) string {
	return hex.EncodeToString(k.Public().(ed25519.PublicKey))
}

// discordBody is an APPLICATION_COMMAND interaction with irregular spacing.
var discordBody = []byte(`{"id": "1234567890123456789",  "application_id": "987654321098765432",
  "type": 2, "token": "aW50ZXJhY3Rpb24", "data": {"name": "` + testBodyMarker + `"}}`)

func discordSignature(k ed25519.PrivateKey, ts string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(k, append([]byte(ts), body...)))
}

func discordHeader(ts, sig string) http.Header {
	h := http.Header{}
	if ts != "" {
		h.Set("X-Signature-Timestamp", ts)
	}
	if sig != "" {
		h.Set("X-Signature-Ed25519", sig)
	}
	return h
}

func discordSigned(k ed25519.PrivateKey, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return discordHeader(ts, discordSignature(k, ts, body))
}

// discordSignedBy reports whether h's X-Signature-Ed25519 is k's signature of its
// X-Signature-Timestamp followed by body: the signature check alone, no timestamp.
func discordSignedBy(k ed25519.PrivateKey, h http.Header, body []byte) bool {
	sig, err := hex.DecodeString(h.Get("X-Signature-Ed25519"))
	signed := append([]byte(h.Get("X-Signature-Timestamp")), body...)
	return err == nil && ed25519.Verify(k.Public().(ed25519.PublicKey), signed, sig)
}

func newTestDiscord(t testing.TB, now func() time.Time, keys ...ed25519.PrivateKey) *provider.Discord {
	t.Helper()
	var public []string
	for _, k := range keys {
		public = append(public, discordPublic(k))
	}
	d, err := provider.NewDiscord(provider.DiscordConfig{PublicKeys: public, NowFunc: now})
	if err != nil {
		t.Fatalf("NewDiscord: %v", err)
	}
	return d
}

func TestDiscordNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestDiscord(t, fixedNow, discordKey)
	if v.Name() != "discord" || v.RetryWindow() != time.Hour {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestDiscordVerifies(t *testing.T) {
	t.Parallel()

	got, err := newTestDiscord(t, fixedNow, discordKey).Verify(discordSigned(discordKey, testNow, discordBody), discordBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "1234567890123456789" || got.Type != "application_command" || !bytes.Equal(got.Body, discordBody) ||
		got.SecretIndex != 0 || !got.Timestamp.Equal(testNow) {
		t.Errorf("Verify = %+v", got)
	}
}

func TestDiscordRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestDiscord(t, fixedNow, discordKey), discordRejections(), testBodyMarker)
}

// discordRejections returns the requests a Discord verifier of discordKey at
// testNow must refuse.
func discordRejections() []rejection {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := discordSignature(discordKey, ts, discordBody)
	h := func(sig string) http.Header { return discordHeader(ts, sig) }
	twoSigs := h(good)
	twoSigs.Add("X-Signature-Ed25519", good)
	signedAt := func(at time.Time) http.Header { return discordSigned(discordKey, at, discordBody) }
	return []rejection{
		{"no header", http.Header{}, discordBody, provider.ErrMissingSignature},
		{"no signature", h(""), discordBody, provider.ErrMissingSignature},
		{"no timestamp", discordHeader("", good), discordBody, provider.ErrMissingSignature},
		{"two signature headers", twoSigs, discordBody, provider.ErrMalformedSignature},
		{"timestamp not a number", discordHeader("soon", good), discordBody, provider.ErrMalformedSignature},
		{"timestamp negative", discordHeader("-1", discordSignature(discordKey, "-1", discordBody)), discordBody, provider.ErrMalformedSignature},
		{"wrong key", discordSigned(discordOtherKey, testNow, discordBody), discordBody, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:126]), discordBody, provider.ErrNoValidSignature},
		{"last digit changed", h(tamper.LastHexChanged(good)), discordBody, provider.ErrNoValidSignature},
		{"non-hex signature", h(strings.Repeat("zz", 64)), discordBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(discordBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(discordBody), provider.ErrNoValidSignature},
		{"signature for another timestamp", discordHeader(strconv.FormatInt(testNow.Unix()+1, 10), good), discordBody, provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), discordBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), discordBody, provider.ErrTimestampOutOfTolerance},
	}
}

func TestDiscordRotation(t *testing.T) {
	t.Parallel()

	d := newTestDiscord(t, fixedNow, discordOtherKey, discordKey)
	for i, k := range []ed25519.PrivateKey{discordOtherKey, discordKey} {
		got, err := d.Verify(discordSigned(k, testNow, discordBody), discordBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("key %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
}

func TestDiscordPingAnsweredWithPong(t *testing.T) {
	t.Parallel()

	d := newTestDiscord(t, fixedNow, discordKey)
	ping := []byte(`{"id":"111","application_id":"222","type":1,"token":"t","version":1}`)
	got, err := d.Verify(discordSigned(discordKey, testNow, ping), ping)
	if err != nil {
		t.Fatal(err)
	}
	var c provider.Challenger = d
	if response, ok := c.Challenge(got); got.Type != "ping" || !ok || string(response) != `{"type":1}` {
		t.Errorf("ping: type %q, Challenge = %s, %t", got.Type, response, ok)
	}
	command, err := d.Verify(discordSigned(discordKey, testNow, discordBody), discordBody)
	if err != nil {
		t.Fatal(err)
	}
	if response, ok := c.Challenge(command); ok || response != nil {
		t.Errorf("Challenge(application_command) = %s, %t", response, ok)
	}
	// An unsigned PING is refused like any request.
	if _, err := d.Verify(discordSigned(discordOtherKey, testNow, ping), ping); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("PING signed by another key: %v", err)
	}
}

func TestDiscordUnparsableEvent(t *testing.T) {
	t.Parallel()

	d := newTestDiscord(t, fixedNow, discordKey)
	for _, body := range []string{`{"type":2}`, `{"id":"1"}`, `{"id":"1","type":"2"}`, `{"id":"1","type":300}`, `[]`, `{"id":"","type":2}`} {
		b := []byte(body)
		if _, err := d.Verify(discordSigned(discordKey, testNow, b), b); !errors.Is(err, provider.ErrUnparsableEvent) {
			t.Errorf("%s: Verify error %v, want %v", body, err, provider.ErrUnparsableEvent)
		}
	}
	b := []byte(`{"id":"1","type":9}`)
	if got, err := d.Verify(discordSigned(discordKey, testNow, b), b); err != nil || got.Type != "interaction_type_9" {
		t.Errorf("unknown type: %+v, %v", got, err)
	}
}

func TestNewDiscordRefusesBadKeys(t *testing.T) {
	t.Parallel()

	for _, keys := range [][]string{nil, {""}, {"abcd"}, {discordPublic(discordKey) + "\n"}, {strings.Repeat("zz", 32)}} {
		if _, err := provider.NewDiscord(provider.DiscordConfig{PublicKeys: keys}); err == nil {
			t.Errorf("NewDiscord(%q) accepted", keys)
		}
	}
}
