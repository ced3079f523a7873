package provider_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/provider"
)

// fuzzSWSecret signs the Standard Webhooks fuzz seeds, including those in
// testdata/fuzz.
const fuzzSWSecret = "whsec_ZnV6ei1zZWNyZXQ="

// FuzzStandardWebhooksHeaders checks that nothing verifies that was not signed:
// whenever Verify accepts, the signature header holds the signature of the id,
// timestamp and body as one of its elements. (internal/oracle's
// FuzzStandardWebhooksHeaders checks that both official libraries accept the same
// request.)
func FuzzStandardWebhooksHeaders(f *testing.F) {
	body := []byte(`{"type":"invoice.paid"}`)
	ts := unix(testNow)
	good := swSign(f, fuzzSWSecret, swID, testNow, body)
	f.Add(swID, ts, good, body)
	f.Add(swID, ts, "v1,AAAA "+good+" v1a,AAAA", body)
	f.Add(swID, "0"+ts, good, body)
	f.Add(swID, ts, good[:20], body)
	f.Add(swID, ts, "v2,"+good[3:], body)
	f.Add(swID, ts, good+",x", body)
	f.Add("", ts, good, body)
	f.Add(swID, "+"+ts, good, body)
	f.Add(swID, ts, "  ", []byte(nil))

	s := newTestStandardWebhooks(f, testNow, fuzzSWSecret)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := swHeader("webhook", "", "", "")
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
		got, err := s.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		want := swSign(t, fuzzSWSecret, id, got.Timestamp, body)
		if !slices.Contains(strings.Split(sig, " "), want) {
			t.Fatalf("accepted signature header %q, which lacks %s", sig, want)
		}
		if got.ID != id || got.Type == "" || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// FuzzStandardWebhooksEvent checks the type of correctly signed bodies against an
// independent reading of the body's "type".
func FuzzStandardWebhooksEvent(f *testing.F) {
	f.Add([]byte(`{"type":"invoice.paid","data":{}}`))
	f.Add([]byte(`{"type":""}`))
	f.Add([]byte(`{"type":1}`))
	f.Add([]byte(`{"type":"a","type":"b"}`))
	f.Add([]byte(`{"Type":"a"}`))
	f.Add([]byte(`{"type":"\ud800"}`))
	f.Add([]byte(`null`))

	s := newTestStandardWebhooks(f, testNow, fuzzSWSecret)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := swHeader("webhook", swID, unix(testNow), swSign(t, fuzzSWSecret, swID, testNow, body))
		got, err := s.Verify(h, body)
		if err != nil {
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("signed body refused with %v", err)
			}
			return
		}
		var fields map[string]any
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			t.Fatalf("accepted a body that is not a JSON object")
		}
		if want, _ := fields["type"].(string); got.Type != want || want == "" || got.ID != swID {
			t.Fatalf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, swID, want)
		}
	})
}
