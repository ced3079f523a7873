package provider_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

const (
	// testSecret is distinctive so that a leak into an error message is easy to find.
	testSecret  = "whsec_test_SECRET_must_not_leak_4f2a"
	otherSecret = "whsec_other_SECRET_must_not_leak_9c1d"

	// testBodyMarker appears in testBody so that a body leaking into an error message
	// is easy to find.
	testBodyMarker = "BODY_MUST_NOT_LEAK"
)

var (
	// testBody is a Stripe-shaped event with irregular spacing and key order, so that
	// re-serializing it changes its bytes.
	testBody = []byte(`{
  "type": "invoice.paid",   "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
  "object": "event",
  "data": {"object": {"id": "in_1", "description": "` + testBodyMarker + `"}}
}`)

	// testNow is the fixed clock of the tests.
	testNow = time.Unix(1_700_000_000, 0)
)

// signedHeader returns a Stripe-Signature header for body, computed from Stripe's
// definition: the bytes stripe-go's test helper produces (internal/oracle checks that
// stripe-go accepts such headers, and makes its own).
func signedHeader(body []byte, secret string, at time.Time) string {
	return fmt.Sprintf("t=%d,v1=%s", at.Unix(), signatureHex(body, secret, at))
}

// signatureHex returns the v1 signature of body at at: the hex HMAC-SHA256 of
// "<unix seconds>.<body>".
func signatureHex(body []byte, secret string, at time.Time) string {
	return hexMAC(sha256.New, secret, []byte(strconv.FormatInt(at.Unix(), 10)+"."), body)
}

func stripeHeader(value string) http.Header {
	h := http.Header{}
	h.Set("Stripe-Signature", value)
	return h
}

// newTestStripe returns a verifier whose clock is testNow.
func newTestStripe(t *testing.T, secrets ...string) *provider.Stripe {
	t.Helper()
	s, err := provider.NewStripe(provider.StripeConfig{
		Secrets: secrets,
		NowFunc: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("NewStripe: %v", err)
	}
	return s
}

func TestStripeNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestStripe(t, testSecret)
	if got := v.Name(); got != "stripe" {
		t.Errorf("Name() = %q, want %q", got, "stripe")
	}
	if got := v.RetryWindow(); got != 72*time.Hour {
		t.Errorf("RetryWindow() = %s, want 72h", got)
	}
}

func TestStripeVerifies(t *testing.T) {
	t.Parallel()

	s := newTestStripe(t, testSecret)
	got, err := s.Verify(stripeHeader(signedHeader(testBody, testSecret, testNow)), testBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != "evt_1NG8Du2eZvKYlo2CUI79vXWy" || got.Type != "invoice.paid" {
		t.Errorf("ID, Type = %q, %q", got.ID, got.Type)
	}
	if !bytes.Equal(got.Body, testBody) {
		t.Errorf("Body is not the body as received")
	}
	if got.SecretIndex != 0 {
		t.Errorf("SecretIndex = %d, want 0", got.SecretIndex)
	}
	if !got.Timestamp.Equal(testNow) {
		t.Errorf("Timestamp = %s, want %s", got.Timestamp, testNow)
	}
}

// stripeRejection is a request Verify must refuse, with the sentinel it must wrap.
type stripeRejection struct {
	name   string
	header http.Header
	body   []byte
	want   error
}

// stripeRejections returns the rejection cases against newTestStripe(t, testSecret).
func stripeRejections() []stripeRejection {
	ts := fmt.Sprintf("t=%d", testNow.Unix())
	good := signatureHex(testBody, testSecret, testNow)

	var reserialized []byte
	{
		var v any
		if err := json.Unmarshal(testBody, &v); err != nil {
			panic(err)
		}
		var err error
		if reserialized, err = json.Marshal(v); err != nil {
			panic(err)
		}
	}

	oneByteChanged := bytes.Clone(testBody)
	i := bytes.Index(oneByteChanged, []byte("paid"))
	oneByteChanged[i] = 'P'

	// Differs from good only in its last hex digit, so only a full-length comparison
	// refuses it.
	lastDigitChanged := good[:63] + "0"
	if good[63] == '0' {
		lastDigitChanged = good[:63] + "1"
	}

	twoHeaders := stripeHeader(ts + ",v1=" + good)
	twoHeaders.Add("Stripe-Signature", ts+",v1="+good)

	return []stripeRejection{
		{"no header", http.Header{}, testBody, provider.ErrMissingSignature},
		{"nil header", nil, testBody, provider.ErrMissingSignature},
		{"empty header", stripeHeader(""), testBody, provider.ErrMissingSignature},
		{"two headers", twoHeaders, testBody, provider.ErrMalformedSignature},
		{"garbage", stripeHeader("garbage"), testBody, provider.ErrMalformedSignature},
		{"missing t", stripeHeader("v1=" + good), testBody, provider.ErrMalformedSignature},
		{"t not a number", stripeHeader("t=soon,v1=" + good), testBody, provider.ErrMalformedSignature},
		{"t empty", stripeHeader("t=,v1=" + good), testBody, provider.ErrMalformedSignature},
		{"t signed", stripeHeader(fmt.Sprintf("t=+%d,v1=%s", testNow.Unix(), good)), testBody, provider.ErrMalformedSignature},
		{"t overflows", stripeHeader("t=99999999999999999999,v1=" + good), testBody, provider.ErrMalformedSignature},
		{"duplicated t", stripeHeader(ts + "," + ts + ",v1=" + good), testBody, provider.ErrMalformedSignature},
		{"pair without equals", stripeHeader(ts + ",v1"), testBody, provider.ErrMalformedSignature},
		{"trailing comma", stripeHeader(ts + ",v1=" + good + ","), testBody, provider.ErrMalformedSignature},
		{"two equals", stripeHeader(ts + ",v1=" + good + "=x"), testBody, provider.ErrMalformedSignature},
		{"header too long", stripeHeader(ts + ",v1=" + good + ",v0=" + strings.Repeat("0", 8<<10)), testBody, provider.ErrMalformedSignature},
		{"too many signatures", stripeHeader(ts + strings.Repeat(",v1=00", 32) + ",v1=" + good), testBody, provider.ErrMalformedSignature},
		{"wrong secret", stripeHeader(signedHeader(testBody, otherSecret, testNow)), testBody, provider.ErrNoValidSignature},
		{"truncated signature", stripeHeader(ts + ",v1=" + good[:32]), testBody, provider.ErrNoValidSignature},
		{"last digit of signature changed", stripeHeader(ts + ",v1=" + lastDigitChanged), testBody, provider.ErrNoValidSignature},
		{"non-hex signature", stripeHeader(ts + ",v1=" + strings.Repeat("zz", 32)), testBody, provider.ErrNoValidSignature},
		{"one byte changed in body", stripeHeader(ts + ",v1=" + good), oneByteChanged, provider.ErrNoValidSignature},
		{"body re-serialized", stripeHeader(ts + ",v1=" + good), reserialized, provider.ErrNoValidSignature},
		{"empty body", stripeHeader(ts + ",v1=" + good), nil, provider.ErrNoValidSignature},
		{"signature for another timestamp", stripeHeader(fmt.Sprintf("t=%d,v1=%s", testNow.Unix()+1, good)), testBody, provider.ErrNoValidSignature},
		{"v0 only", stripeHeader(ts + ",v0=" + good), testBody, provider.ErrNoValidSignature},
		{"no signature at all", stripeHeader(ts), testBody, provider.ErrNoValidSignature},
		{"too old", stripeHeader(signedHeader(testBody, testSecret, testNow.Add(-provider.DefaultTolerance-time.Second))), testBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", stripeHeader(signedHeader(testBody, testSecret, testNow.Add(provider.DefaultTolerance+time.Second))), testBody, provider.ErrTimestampOutOfTolerance},
		{"epoch", stripeHeader(signedHeader(testBody, testSecret, time.Unix(0, 0))), testBody, provider.ErrTimestampOutOfTolerance},
		{"max timestamp", stripeHeader(fmt.Sprintf("t=9223372036854775807,v1=%s", signatureHex(testBody, testSecret, time.Unix(1<<63-1, 0)))), testBody, provider.ErrTimestampOutOfTolerance},
	}
}

func TestStripeRejects(t *testing.T) {
	t.Parallel()

	s := newTestStripe(t, testSecret)
	for _, tt := range stripeRejections() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := s.Verify(tt.header, tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify error = %v, want %v", err, tt.want)
			}
			if got.ID != "" || got.Body != nil {
				t.Errorf("Verify returned %+v with an error", got)
			}
			wantUnauthorized := tt.want == provider.ErrNoValidSignature || tt.want == provider.ErrTimestampOutOfTolerance
			if provider.IsUnauthorized(err) != wantUnauthorized {
				t.Errorf("IsUnauthorized = %t, want %t", !wantUnauthorized, wantUnauthorized)
			}
		})
	}
}

func TestStripeAcceptsOneBadOneGoodSignature(t *testing.T) {
	t.Parallel()

	s := newTestStripe(t, testSecret)
	header := fmt.Sprintf("t=%d,v1=%s,v1=%s",
		testNow.Unix(), signatureHex(testBody, otherSecret, testNow), signatureHex(testBody, testSecret, testNow))
	if _, err := s.Verify(stripeHeader(header), testBody); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestStripeRotation(t *testing.T) {
	t.Parallel()

	s := newTestStripe(t, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := s.Verify(stripeHeader(signedHeader(testBody, secret, testNow)), testBody)
		if err != nil {
			t.Fatalf("secret %d: Verify: %v", i, err)
		}
		if got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex = %d", i, got.SecretIndex)
		}
	}
}

func TestNewStripeCopiesSecrets(t *testing.T) {
	t.Parallel()

	secrets := []string{testSecret}
	s, err := provider.NewStripe(provider.StripeConfig{Secrets: secrets, NowFunc: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	secrets[0] = otherSecret
	if _, err := s.Verify(stripeHeader(signedHeader(testBody, testSecret, testNow)), testBody); err != nil {
		t.Fatalf("Verify after the caller changed its slice: %v", err)
	}
}

func TestNewStripeRefuses(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		cfg  provider.StripeConfig
	}{
		{"nil secrets", provider.StripeConfig{}},
		{"empty secrets", provider.StripeConfig{Secrets: []string{}}},
		{"empty secret", provider.StripeConfig{Secrets: []string{testSecret, ""}}},
		{"blank secret", provider.StripeConfig{Secrets: []string{" \t\n"}}},
		{"padded secret", provider.StripeConfig{Secrets: []string{testSecret + "\n"}}},
		{"negative tolerance", provider.StripeConfig{Secrets: []string{testSecret}, Tolerance: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s, err := provider.NewStripe(tt.cfg)
			if err == nil {
				t.Fatalf("NewStripe = %v, want an error", s)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("error %q contains a secret", err)
			}
		})
	}
}

func TestStripeTolerance(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		tolerance time.Duration
		skew      time.Duration // signing time minus now
		wantOK    bool
	}{
		{"default, 4m old", 0, -4 * time.Minute, true},
		{"default, 6m old", 0, -6 * time.Minute, false},
		{"default, 4m ahead", 0, 4 * time.Minute, true},
		{"default, 6m ahead", 0, 6 * time.Minute, false},
		{"default, exactly at the limit", 0, -provider.DefaultTolerance, true},
		{"default, a second past the limit", 0, -provider.DefaultTolerance - time.Second, false},
		{"10m, 6m old", 10 * time.Minute, -6 * time.Minute, true},
		{"10m, 6m ahead", 10 * time.Minute, 6 * time.Minute, true},
		{"10m, 11m old", 10 * time.Minute, -11 * time.Minute, false},
		{"1s, same second", time.Second, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s, err := provider.NewStripe(provider.StripeConfig{
				Secrets:   []string{testSecret},
				Tolerance: tt.tolerance,
				NowFunc:   func() time.Time { return testNow },
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Verify(stripeHeader(signedHeader(testBody, testSecret, testNow.Add(tt.skew))), testBody)
			switch {
			case tt.wantOK && err != nil:
				t.Errorf("Verify: %v", err)
			case !tt.wantOK && !errors.Is(err, provider.ErrTimestampOutOfTolerance):
				t.Errorf("Verify error = %v, want %v", err, provider.ErrTimestampOutOfTolerance)
			}
		})
	}
}

func TestStripeUnparsableEvent(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		body     string
		wantText string
	}{
		{"no id", `{"type":"invoice.paid"}`, "no id"},
		{"no type", `{"id":"evt_1"}`, "no type"},
		{"empty id", `{"id":"","type":"invoice.paid"}`, "no id"},
		{"null id", `{"id":null,"type":"invoice.paid"}`, "no id"},
		{"empty type", `{"id":"evt_1","type":""}`, "no type"},
		{"numeric id", `{"id":1,"type":"invoice.paid"}`, "id is not a string"},
		{"object type", `{"id":"evt_1","type":{}}`, "type is not a string"},
		{"id in other case", `{"ID":"evt_1","Type":"invoice.paid"}`, "no id"},
		{"array", `[{"id":"evt_1","type":"invoice.paid"}]`, "not a JSON object"},
		{"string", `"evt_1"`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"empty", ``, "not a JSON object"},
		{"not JSON", `id=evt_1&type=invoice.paid`, "not a JSON object"},
		{"trailing data", `{"id":"evt_1","type":"invoice.paid"} {}`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s := newTestStripe(t, testSecret)
			body := []byte(tt.body)
			_, err := s.Verify(stripeHeader(signedHeader(body, testSecret, testNow)), body)
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("Verify error = %v, want %v", err, provider.ErrUnparsableEvent)
			}
			if provider.IsUnauthorized(err) {
				t.Errorf("IsUnauthorized = true for a verified body")
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Verify error = %q, want it to mention %q", err, tt.wantText)
			}
		})
	}
}

func TestStripeErrorsHideSecretsAndBody(t *testing.T) {
	t.Parallel()

	s := newTestStripe(t, testSecret)
	var errs []error
	for _, tt := range stripeRejections() {
		_, err := s.Verify(tt.header, tt.body)
		errs = append(errs, err)
	}
	for _, body := range []string{`{"` + testBodyMarker + `":1}`, `"` + testBodyMarker + ``, `{"id":{"` + testBodyMarker + `":1},"type":"x"}`} {
		_, err := s.Verify(stripeHeader(signedHeader([]byte(body), testSecret, testNow)), []byte(body))
		errs = append(errs, err)
	}
	_, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret, otherSecret + " "}})
	errs = append(errs, err)

	for i, err := range errs {
		if err == nil {
			t.Fatalf("case %d: expected an error", i)
		}
		for _, forbidden := range []string{testSecret, otherSecret, "whsec_", testBodyMarker} {
			if strings.Contains(err.Error(), forbidden) {
				t.Errorf("error %q contains %q", err, forbidden)
			}
		}
	}
}

func TestStripeConcurrentVerify(t *testing.T) {
	t.Parallel()

	s := newTestStripe(t, otherSecret, testSecret)
	header := stripeHeader(signedHeader(testBody, testSecret, testNow))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := s.Verify(header, testBody); err != nil {
					t.Errorf("Verify: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
