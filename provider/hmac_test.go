package provider_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// hmacBody is an event with irregular spacing, so that re-serializing it changes its
// bytes, and its id and type nested below the top level.
var hmacBody = []byte(`{"event": {"id": "ev_42",  "kind": "order.paid"},
  "id": 820982911946154508, "type": "order.paid", "note": "` + testBodyMarker + `"}`)

// hmacTimestamped is a generic scheme with a prefix, a timestamp and the default
// "{timestamp}.{body}".
var hmacTimestamped = map[string]string{
	"header":           "X-Signature",
	"prefix":           "sha256=",
	"timestamp_header": "X-Timestamp",
}

func newTestHMAC(t testing.TB, params map[string]string, secrets ...string) provider.Verifier {
	t.Helper()
	v, err := provider.New("hmac", provider.Options{Secrets: secrets, Params: params, NowFunc: fixedNow})
	if err != nil {
		t.Fatalf("New(hmac): %v", err)
	}
	return v
}

// hmacTimestampedHeader returns the headers of the hmacTimestamped scheme, signed
// with secret at at, computed directly from the definition.
func hmacTimestampedHeader(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("X-Timestamp", ts)
	h.Set("X-Signature", "sha256="+hexMAC(sha256.New, secret, []byte(ts+"."), body))
	return h
}

func TestHMACNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	v := newTestHMAC(t, map[string]string{"header": "X-Signature"}, testSecret)
	if got := v.Name(); got != "hmac" {
		t.Errorf("Name() = %q, want %q", got, "hmac")
	}
	if got := v.RetryWindow(); got != 72*time.Hour {
		t.Errorf("RetryWindow() = %s, want 72h", got)
	}
	v = newTestHMAC(t, map[string]string{"header": "X-Signature", "retry_window": "36h"}, testSecret)
	if got := v.RetryWindow(); got != 36*time.Hour {
		t.Errorf("RetryWindow() with retry_window 36h = %s", got)
	}
}

// TestHMACSchemes configures the generic scheme after several real ones and checks
// signatures computed from each definition.
func TestHMACSchemes(t *testing.T) {
	t.Parallel()

	ts := strconv.FormatInt(testNow.Unix(), 10)
	tests := []struct {
		name   string
		params map[string]string
		header http.Header
	}{
		{
			"defaults: hex sha256 over the body",
			map[string]string{"header": "X-Signature"},
			http.Header{"X-Signature": {hexMAC(sha256.New, testSecret, hmacBody)}},
		},
		{
			"sha512, base64, prefix",
			map[string]string{"header": "X-Sig", "algorithm": "sha512", "encoding": "base64", "prefix": "sha512="},
			http.Header{"X-Sig": {"sha512=" + base64MAC(sha512.New, testSecret, hmacBody)}},
		},
		{
			"GitHub's",
			map[string]string{"header": "X-Hub-Signature-256", "prefix": "sha256="},
			http.Header{"X-Hub-Signature-256": {"sha256=" + hexMAC(sha256.New, testSecret, hmacBody)}},
		},
		{
			"Slack's",
			map[string]string{"header": "X-Slack-Signature", "prefix": "v0=", "timestamp_header": "X-Slack-Request-Timestamp", "signed_payload": "v0:{timestamp}:{body}"},
			http.Header{"X-Slack-Signature": {slackSignature(testSecret, ts, hmacBody)}, "X-Slack-Request-Timestamp": {ts}},
		},
		{
			"timestamp and id signed",
			map[string]string{"header": "Sig", "timestamp_header": "Ts", "id_header": "Msg-Id", "signed_payload": "{id}.{timestamp}.{body}", "encoding": "base64"},
			http.Header{"Sig": {base64MAC(sha256.New, testSecret, []byte("ev_42."+ts+"."), hmacBody)}, "Ts": {ts}, "Msg-Id": {"ev_42"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := newTestHMAC(t, tt.params, testSecret).Verify(tt.header, hmacBody)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			wantID := "820982911946154508"
			if tt.params["id_header"] != "" {
				wantID = "ev_42"
			}
			if got.ID != wantID || got.Type != "order.paid" || !bytes.Equal(got.Body, hmacBody) || got.SecretIndex != 0 {
				t.Errorf("Verify = %+v", got)
			}
			if _, timestamped := tt.params["timestamp_header"]; timestamped != !got.Timestamp.IsZero() {
				t.Errorf("Timestamp = %s", got.Timestamp)
			}
		})
	}
}

func TestHMACRejects(t *testing.T) {
	t.Parallel()

	good := hmacTimestampedHeader(testSecret, testNow, hmacBody)
	sig := good.Get("X-Signature")
	with := func(name, value string) http.Header {
		h := good.Clone()
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	twoSigs := good.Clone()
	twoSigs.Add("X-Signature", sig)
	twoTimestamps := good.Clone()
	twoTimestamps.Add("X-Timestamp", good.Get("X-Timestamp"))
	signedAt := func(at time.Time) http.Header { return hmacTimestampedHeader(testSecret, at, hmacBody) }

	testRejections(t, newTestHMAC(t, hmacTimestamped, testSecret), []rejection{
		{"no header", http.Header{}, hmacBody, provider.ErrMissingSignature},
		{"nil header", nil, hmacBody, provider.ErrMissingSignature},
		{"no signature", with("X-Signature", ""), hmacBody, provider.ErrMissingSignature},
		{"no timestamp", with("X-Timestamp", ""), hmacBody, provider.ErrMissingSignature},
		{"two signature headers", twoSigs, hmacBody, provider.ErrMalformedSignature},
		{"two timestamp headers", twoTimestamps, hmacBody, provider.ErrMalformedSignature},
		{"no prefix", with("X-Signature", strings.TrimPrefix(sig, "sha256=")), hmacBody, provider.ErrMalformedSignature},
		{"header too long", with("X-Signature", sig+strings.Repeat("0", 8<<10)), hmacBody, provider.ErrMalformedSignature},
		{"timestamp not a number", with("X-Timestamp", "soon"), hmacBody, provider.ErrMalformedSignature},
		{"wrong secret", hmacTimestampedHeader(otherSecret, testNow, hmacBody), hmacBody, provider.ErrNoValidSignature},
		{"truncated signature", with("X-Signature", sig[:39]), hmacBody, provider.ErrNoValidSignature},
		{"last digit changed", with("X-Signature", tamper.LastHexChanged(sig)), hmacBody, provider.ErrNoValidSignature},
		{"non-hex signature", with("X-Signature", "sha256="+strings.Repeat("zz", 32)), hmacBody, provider.ErrNoValidSignature},
		{"one byte changed in body", good, tamper.OneByteChanged(hmacBody, testBodyMarker), provider.ErrNoValidSignature},
		{"body re-serialized", good, tamper.Reserialized(hmacBody), provider.ErrNoValidSignature},
		{"empty body", good, nil, provider.ErrNoValidSignature},
		{"signature for another timestamp", with("X-Timestamp", strconv.FormatInt(testNow.Unix()+1, 10)), hmacBody, provider.ErrNoValidSignature},
		{"unsigned timestamp", with("X-Signature", "sha256="+hexMAC(sha256.New, testSecret, hmacBody)), hmacBody, provider.ErrNoValidSignature},
		{"unknown algorithm alone (sha512)", with("X-Signature", "sha256="+hexMAC(sha512.New, testSecret, []byte(good.Get("X-Timestamp")+"."), hmacBody)), hmacBody, provider.ErrNoValidSignature},
		{"too old", signedAt(testNow.Add(-provider.DefaultTolerance - time.Second)), hmacBody, provider.ErrTimestampOutOfTolerance},
		{"too far in the future", signedAt(testNow.Add(provider.DefaultTolerance + time.Second)), hmacBody, provider.ErrTimestampOutOfTolerance},
	}, testSecret, testBodyMarker)
}

func TestHMACRejectsBase64(t *testing.T) {
	t.Parallel()

	params := map[string]string{"header": "X-Signature", "encoding": "base64"}
	good := base64MAC(sha256.New, testSecret, hmacBody)
	h := func(sig string) http.Header { return http.Header{"X-Signature": {sig}} }
	testRejections(t, newTestHMAC(t, params, testSecret), []rejection{
		{"truncated signature", h(good[:24]), hmacBody, provider.ErrNoValidSignature},
		{"last character changed", h(tamper.LastBase64Changed(good)), hmacBody, provider.ErrNoValidSignature},
		{"hex instead of base64", h(hexMAC(sha256.New, testSecret, hmacBody)), hmacBody, provider.ErrNoValidSignature},
		{"padding dropped", h(strings.TrimRight(good, "=")), hmacBody, provider.ErrNoValidSignature},
		{"body re-serialized", h(good), tamper.Reserialized(hmacBody), provider.ErrNoValidSignature},
	}, testSecret, testBodyMarker)
}

func TestHMACRotation(t *testing.T) {
	t.Parallel()

	v := newTestHMAC(t, hmacTimestamped, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(hmacTimestampedHeader(secret, testNow, hmacBody), hmacBody)
		if err != nil {
			t.Fatalf("secret %d: Verify: %v", i, err)
		}
		if got.SecretIndex != i {
			t.Errorf("secret %d: SecretIndex = %d", i, got.SecretIndex)
		}
	}
}

func TestHMACEventIDAndType(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		params   map[string]string
		header   http.Header
		body     string
		wantID   string
		wantType string
		wantErr  string
	}{
		{"defaults", nil, nil, `{"id":"e1","type":"t1"}`, "e1", "t1", ""},
		{"numeric id keeps every digit", nil, nil, `{"id":820982911946154508,"type":"t1"}`, "820982911946154508", "t1", ""},
		{"dot paths", map[string]string{"id_field": "event.id", "type_field": "event.kind"}, nil, `{"event":{"id":"e2","kind":"k2"}}`, "e2", "k2", ""},
		{"headers", map[string]string{"id_header": "X-Id", "type_header": "X-Type"}, http.Header{"X-Id": {"h1"}, "X-Type": {"ht"}}, `not even JSON`, "h1", "ht", ""},
		{"id header, type field", map[string]string{"id_header": "X-Id"}, http.Header{"X-Id": {"h1"}}, `{"type":"t1"}`, "h1", "t1", ""},
		{"no id", nil, nil, `{"type":"t1"}`, "", "", "no id"},
		{"no nested id", map[string]string{"id_field": "event.id"}, nil, `{"event":{},"type":"t"}`, "", "", "no event.id"},
		{"nested in a non-object", map[string]string{"id_field": "event.id"}, nil, `{"event":"x","type":"t"}`, "", "", "no event.id"},
		{"no type", nil, nil, `{"id":"e1"}`, "", "", "no type"},
		{"numeric type", nil, nil, `{"id":"e1","type":2}`, "", "", "type is not a string"},
		{"boolean id", nil, nil, `{"id":true,"type":"t"}`, "", "", "id is not a string"},
		{"no id header", map[string]string{"id_header": "X-Id"}, nil, `{"type":"t1"}`, "", "", "no X-Id header"},
		{"no type header", map[string]string{"type_header": "X-Type"}, nil, `{"id":"e1"}`, "", "", "no X-Type header"},
		{"not JSON", nil, nil, `id=e1`, "", "", "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			params := map[string]string{"header": "X-Signature"}
			for k, v := range tt.params {
				params[k] = v
			}
			body := []byte(tt.body)
			h := tt.header.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("X-Signature", hexMAC(sha256.New, testSecret, body))
			got, err := newTestHMAC(t, params, testSecret).Verify(h, body)
			if tt.wantErr != "" {
				if !errors.Is(err, provider.ErrUnparsableEvent) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Verify error = %v, want %v mentioning %q", err, provider.ErrUnparsableEvent, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.ID != tt.wantID || got.Type != tt.wantType {
				t.Errorf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, tt.wantID, tt.wantType)
			}
		})
	}
}

// TestHMACSignedIDIsRequired checks that an id the signed payload includes is part of
// the signature: without it nothing can be verified, and another id does not verify.
func TestHMACSignedIDIsRequired(t *testing.T) {
	t.Parallel()

	v := newTestHMAC(t, map[string]string{"header": "Sig", "id_header": "Msg-Id", "signed_payload": "{id}:{body}"}, testSecret)
	sig := hexMAC(sha256.New, testSecret, []byte("ev_42:"), hmacBody)
	if _, err := v.Verify(http.Header{"Sig": {sig}}, hmacBody); !errors.Is(err, provider.ErrMissingSignature) {
		t.Errorf("no id: Verify error = %v, want %v", err, provider.ErrMissingSignature)
	}
	if _, err := v.Verify(http.Header{"Sig": {sig}, "Msg-Id": {"ev_43"}}, hmacBody); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("another id: Verify error = %v, want %v", err, provider.ErrNoValidSignature)
	}
	if got, err := v.Verify(http.Header{"Sig": {sig}, "Msg-Id": {"ev_42"}}, hmacBody); err != nil || got.ID != "ev_42" {
		t.Errorf("Verify = %+v, %v", got, err)
	}
}

func TestNewHMACRefuses(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		params   map[string]string
		wantText string
	}{
		{"no header", map[string]string{}, "header is required"},
		{"header not a token", map[string]string{"header": "X Signature"}, `header "X Signature" is not a header name`},
		{"unknown key", map[string]string{"header": "X-Sig", "algorithm ": "sha256"}, `"algorithm "`},
		{"misspelt key", map[string]string{"header": "X-Sig", "timestamp": "X-Ts"}, `"timestamp"`},
		{"sha1", map[string]string{"header": "X-Sig", "algorithm": "sha1"}, `algorithm "sha1"`},
		{"md5", map[string]string{"header": "X-Sig", "algorithm": "md5"}, `algorithm "md5"`},
		{"encoding", map[string]string{"header": "X-Sig", "encoding": "base32"}, `encoding "base32"`},
		{"no body in payload", map[string]string{"header": "X-Sig", "signed_payload": "{timestamp}", "timestamp_header": "X-Ts"}, "no {body}"},
		{"body twice", map[string]string{"header": "X-Sig", "signed_payload": "{body}{body}"}, "{body} more than once"},
		{"unknown placeholder", map[string]string{"header": "X-Sig", "signed_payload": "{ts}.{body}"}, "unknown placeholder {ts}"},
		{"unclosed brace", map[string]string{"header": "X-Sig", "signed_payload": "{body"}, "unclosed {"},
		{"stray brace", map[string]string{"header": "X-Sig", "signed_payload": "}{body}"}, "} outside a placeholder"},
		{"timestamp placeholder without header", map[string]string{"header": "X-Sig", "signed_payload": "{timestamp}.{body}"}, "no timestamp_header"},
		{"timestamp header not signed", map[string]string{"header": "X-Sig", "timestamp_header": "X-Ts", "signed_payload": "{body}"}, "no {timestamp}"},
		{"id placeholder without header", map[string]string{"header": "X-Sig", "signed_payload": "{id}.{body}"}, "no id_header"},
		{"timestamp header is the signature header", map[string]string{"header": "X-Sig", "timestamp_header": "x-sig"}, "timestamp_header is the signature header"},
		{"id header and field", map[string]string{"header": "X-Sig", "id_header": "X-Id", "id_field": "id"}, "exclusive"},
		{"type header and field", map[string]string{"header": "X-Sig", "type_header": "X-T", "type_field": "type"}, "exclusive"},
		{"empty path key", map[string]string{"header": "X-Sig", "id_field": "data..id"}, `id_field "data..id"`},
		{"path too deep", map[string]string{"header": "X-Sig", "type_field": "a.b.c.d.e.f.g.h.i"}, `type_field "a.b.c.d.e.f.g.h.i"`},
		{"retry window not a duration", map[string]string{"header": "X-Sig", "retry_window": "3 days"}, `retry_window "3 days"`},
		{"negative retry window", map[string]string{"header": "X-Sig", "retry_window": "-1h"}, "retry_window -1h0m0s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			v, err := provider.New("hmac", provider.Options{Secrets: []string{testSecret}, Params: tt.params})
			if err == nil {
				t.Fatalf("New = %v, want an error", v)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not mention %q", err, tt.wantText)
			}
			checkErrorHides(t, err, testSecret)
		})
	}
}
