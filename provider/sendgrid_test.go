package provider_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
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

var (
	sendgridKey      = mustECDSAKey()
	sendgridOtherKey = mustECDSAKey()
)

func mustECDSAKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// sendgridPublic returns k's public key as SendGrid shows it: base64 DER.
func sendgridPublic(k *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// sendgridBody is one event, as SendGrid posts it: an array, irregular spacing.
var sendgridBody = []byte(`[{"email": "` + testBodyMarker + `@example.com", "timestamp": 1700000000,
  "event": "delivered", "sg_event_id": "ZGVsaXZlcmVkLTAtMTIzNDU2", "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"}]`)

func sendgridSignature(k *ecdsa.PrivateKey, ts string, body []byte) string {
	sum := sha256.Sum256(append([]byte(ts), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, k, sum[:])
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

func sendgridHeader(ts, sig string) http.Header {
	h := http.Header{}
	if ts != "" {
		h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
	}
	if sig != "" {
		h.Set("X-Twilio-Email-Event-Webhook-Signature", sig)
	}
	return h
}

func sendgridSigned(k *ecdsa.PrivateKey, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return sendgridHeader(ts, sendgridSignature(k, ts, body))
}

// sendgridSignedBy reports whether h's signature is public's over its timestamp
// followed by body: the signature check alone, no timestamp.
func sendgridSignedBy(public *ecdsa.PublicKey, h http.Header, body []byte) bool {
	sig, err := base64.StdEncoding.DecodeString(h.Get("X-Twilio-Email-Event-Webhook-Signature"))
	sum := sha256.Sum256(append([]byte(h.Get("X-Twilio-Email-Event-Webhook-Timestamp")), body...))
	return err == nil && ecdsa.VerifyASN1(public, sum[:], sig)
}

func newTestSendGrid(t testing.TB, now func() time.Time, keys ...string) *provider.SendGrid {
	t.Helper()
	s, err := provider.NewSendGrid(provider.SendGridConfig{PublicKeys: keys, NowFunc: now})
	if err != nil {
		t.Fatalf("NewSendGrid: %v", err)
	}
	return s
}

func TestSendGridNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestSendGrid(t, fixedNow, sendgridPublic(sendgridKey))
	if v.Name() != "sendgrid" || v.RetryWindow() != 24*time.Hour {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestSendGridVerifies(t *testing.T) {
	t.Parallel()

	got, err := newTestSendGrid(t, fixedNow, sendgridPublic(sendgridKey)).Verify(sendgridSigned(sendgridKey, testNow, sendgridBody), sendgridBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "ZGVsaXZlcmVkLTAtMTIzNDU2" || got.Type != "delivered" || !bytes.Equal(got.Body, sendgridBody) ||
		got.SecretIndex != 0 || !got.Timestamp.Equal(testNow) {
		t.Errorf("Verify = %+v", got)
	}
}

// TestSendGridPublishedVector verifies the example that sendgrid-go's own tests
// verify (helpers/eventwebhook/eventwebhook_test.go: publicKey, signature,
// timestamp, and the payload of generateTestPayload, which ends in CRLF).
func TestSendGridPublishedVector(t *testing.T) {
	t.Parallel()

	const (
		publicKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
		signature = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
		timestamp = "1600112502"
	)
	payload := []byte(`[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]` + "\r\n")
	s := newTestSendGrid(t, func() time.Time { return time.Unix(1600112502, 0) }, publicKey)
	got, err := s.Verify(sendgridHeader(timestamp, signature), payload)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA" || got.Type != "dropped" {
		t.Errorf("ID, Type = %q, %q", got.ID, got.Type)
	}
}

func TestSendGridRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestSendGrid(t, fixedNow, sendgridPublic(sendgridKey)), sendgridRejections(), testBodyMarker)
}

func sendgridRejections() []rejection {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := sendgridSignature(sendgridKey, ts, sendgridBody)
	h := func(sig string) http.Header { return sendgridHeader(ts, sig) }
	signedAt := func(at time.Time) http.Header { return sendgridSigned(sendgridKey, at, sendgridBody) }
	der, _ := base64.StdEncoding.DecodeString(good)
	return []rejection{
		{"no header", http.Header{}, sendgridBody, provider.ErrMissingSignature},
		{"no signature", h(""), sendgridBody, provider.ErrMissingSignature},
		{"no timestamp", sendgridHeader("", good), sendgridBody, provider.ErrMissingSignature},
		{"timestamp not a number", sendgridHeader("soon", good), sendgridBody, provider.ErrMalformedSignature},
		{"wrong key", sendgridSigned(sendgridOtherKey, testNow, sendgridBody), sendgridBody, provider.ErrNoValidSignature},
		{"not base64", h("!!" + good), sendgridBody, provider.ErrNoValidSignature},
		{"unpadded base64", h(strings.TrimRight(good, "=") + "x"), sendgridBody, provider.ErrNoValidSignature},
		{"trailing data after the DER", h(base64.StdEncoding.EncodeToString(append(der, 0))), sendgridBody, provider.ErrNoValidSignature},
		{"too long", h(strings.Repeat("A", 200)), sendgridBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(sendgridBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(sendgridBody), provider.ErrNoValidSignature},
		{"signature for another timestamp", sendgridHeader(strconv.FormatInt(testNow.Unix()+1, 10), good), sendgridBody, provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), sendgridBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), sendgridBody, provider.ErrTimestampOutOfTolerance},
	}
}

func TestSendGridRotation(t *testing.T) {
	t.Parallel()

	s := newTestSendGrid(t, fixedNow, sendgridPublic(sendgridOtherKey), sendgridPublic(sendgridKey))
	for i, k := range []*ecdsa.PrivateKey{sendgridOtherKey, sendgridKey} {
		got, err := s.Verify(sendgridSigned(k, testNow, sendgridBody), sendgridBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("key %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
}

// Verify takes a body of one event; a body of several is VerifyBatch's.
func TestSendGridUnparsableEvent(t *testing.T) {
	t.Parallel()

	s := newTestSendGrid(t, fixedNow, sendgridPublic(sendgridKey))
	for _, body := range []string{
		`[]`, `{"event":"delivered","sg_event_id":"x"}`, `[{"event":"delivered"}]`, `[{"sg_event_id":"x"}]`,
		`[{"event":"delivered","sg_event_id":"a"},{"event":"open","sg_event_id":"b"}]`, `[1]`,
	} {
		b := []byte(body)
		if _, err := s.Verify(sendgridSigned(sendgridKey, testNow, b), b); !errors.Is(err, provider.ErrUnparsableEvent) {
			t.Errorf("%s: Verify error %v, want %v", body, err, provider.ErrUnparsableEvent)
		}
	}
}

func TestNewSendGridRefusesBadKeys(t *testing.T) {
	t.Parallel()

	ed := base64.StdEncoding.EncodeToString(mustMarshalPKIX(discordKey.Public()))
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	for _, keys := range [][]string{nil, {""}, {"abcd"}, {sendgridPublic(sendgridKey) + "\n"}, {ed}, {sendgridPublic(p384)}} {
		if _, err := provider.NewSendGrid(provider.SendGridConfig{PublicKeys: keys}); err == nil {
			t.Errorf("NewSendGrid(%.20q) accepted", keys)
		}
	}
}

func mustMarshalPKIX(pub any) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return der
}

// VerifyBatch checks the signature once and returns each event of the array with its
// own id, type and JSON; one unusable item, or a tampered body, refuses the POST.
func TestSendGridVerifyBatch(t *testing.T) {
	t.Parallel()

	s := newTestSendGrid(t, fixedNow, sendgridPublic(sendgridKey))
	body := []byte(`[{"event":"delivered","sg_event_id":"a","email":"x@example.com"},{"event":"open","sg_event_id":"b"}, {"event":"bounce","sg_event_id":"c"}]`)
	got, err := s.VerifyBatch(sendgridSigned(sendgridKey, testNow, body), body)
	if err != nil || len(got) != 3 {
		t.Fatalf("VerifyBatch: %d events, %v", len(got), err)
	}
	if got[0].ID != "a" || got[0].Type != "delivered" || string(got[0].Body) != `{"event":"delivered","sg_event_id":"a","email":"x@example.com"}` ||
		got[2].ID != "c" || got[2].Type != "bounce" {
		t.Fatalf("events %+v", got)
	}
	if empty, err := s.VerifyBatch(sendgridSigned(sendgridKey, testNow, []byte(`[]`)), []byte(`[]`)); err != nil || len(empty) != 0 {
		t.Fatalf("an empty array: %v, %v", empty, err)
	}
	bad := []byte(`[{"event":"delivered","sg_event_id":"a"},{"event":"open"}]`)
	if _, err := s.VerifyBatch(sendgridSigned(sendgridKey, testNow, bad), bad); !errors.Is(err, provider.ErrUnparsableEvent) {
		t.Fatalf("an item with no id: %v", err)
	}
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-3] = 'd'
	if _, err := s.VerifyBatch(sendgridSigned(sendgridKey, testNow, body), tampered); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Fatalf("a tampered body: %v", err)
	}
}
