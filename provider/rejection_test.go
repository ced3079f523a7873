package provider_test

import (
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
