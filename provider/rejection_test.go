package provider_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/provider"
)

// rejection is a request a verifier must refuse, with the sentinel it must wrap.
type rejection struct {
	name   string
	header http.Header
	body   []byte
	want   error
}

// testRejections runs each case against v: Verify must fail with the case's
// sentinel, return no event, classify the error as unauthorized exactly when it is a
// signature or timestamp failure, and name none of forbidden (secrets, body markers).
func testRejections(t *testing.T, v provider.Verifier, cases []rejection, forbidden ...string) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := v.Verify(tt.header, tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify error = %v, want %v", err, tt.want)
			}
			if got.ID != "" || got.Type != "" || got.Body != nil {
				t.Errorf("Verify returned %+v with an error", got)
			}
			wantUnauthorized := tt.want == provider.ErrNoValidSignature || tt.want == provider.ErrTimestampOutOfTolerance
			if provider.IsUnauthorized(err) != wantUnauthorized {
				t.Errorf("IsUnauthorized = %t, want %t", !wantUnauthorized, wantUnauthorized)
			}
			checkErrorHides(t, err, forbidden...)
		})
	}
}

// checkErrorHides fails t if err's text contains any of forbidden.
func checkErrorHides(t *testing.T, err error, forbidden ...string) {
	t.Helper()
	for _, f := range forbidden {
		if f != "" && strings.Contains(err.Error(), f) {
			t.Errorf("error %q contains %q", err, f)
		}
	}
}

// reserialized returns body decoded and encoded again by encoding/json: the same
// JSON value, other bytes.
func reserialized(body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		panic(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if bytes.Equal(out, body) {
		panic("re-serializing did not change the body; give it irregular spacing")
	}
	return out
}

// oneByteChanged returns body with the first byte of marker's first occurrence
// replaced.
func oneByteChanged(body []byte, marker string) []byte {
	out := bytes.Clone(body)
	i := bytes.Index(out, []byte(marker))
	if i < 0 {
		panic("marker not in body")
	}
	out[i] ^= 0x20
	return out
}

// lastHexChanged returns hex digits s with the last one changed, so that only a
// full-length comparison tells the two apart.
func lastHexChanged(s string) string {
	if s[len(s)-1] == '0' {
		return s[:len(s)-1] + "1"
	}
	return s[:len(s)-1] + "0"
}

// lastBase64Changed returns padded base64 s with its last significant character
// changed and the encoding still canonical. That character's low bits are zero padding
// for digests of 32 and 64 bytes, so it is one of A, Q, g, w; swapping A and Q changes
// a data bit.
func lastBase64Changed(s string) string {
	i := len(strings.TrimRight(s, "=")) - 1
	c := byte('A')
	if s[i] == 'A' {
		c = 'Q'
	}
	return s[:i] + string(c) + s[i+1:]
}
