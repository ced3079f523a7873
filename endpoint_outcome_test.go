package hookinbox

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// writeOutcome assembles the answer's body by hand for speed; it must be what
// encoding/json writes, for every outcome and for one that JSON has to escape.
func TestWriteOutcome_IsWhatEncodingJSONWrites(t *testing.T) {
	for _, out := range []Outcome{OutcomeProcessed, OutcomeDuplicate, OutcomeIgnored, OutcomeAccepted,
		OutcomeChallenge, OutcomeBatch, `a"b<c>`, ""} {
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		writeOutcome(got, out)
		want.Header().Set(OutcomeHeader, string(out))
		writeJSON(want, http.StatusOK, map[string]string{"outcome": string(out)})
		if got.Code != want.Code || got.Body.String() != want.Body.String() ||
			!maps.EqualFunc(got.Header(), want.Header(), slices.Equal) {
			t.Errorf("writeOutcome(%q): %d %v %q, encoding/json: %d %v %q", out,
				got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}
