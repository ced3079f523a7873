package oracle_test

import (
	"net/http"
	"testing"
)

// FuzzStandardWebhooksHeaders checks that whatever provider.StandardWebhooks
// accepts, both official libraries accept too: the oracle half of provider's
// FuzzStandardWebhooksHeaders, whose seeds it shares.
func FuzzStandardWebhooksHeaders(f *testing.F) {
	body := []byte(`{"type":"invoice.paid"}`)
	ts := unix(testNow)
	good := swSign(f, fuzzSWSecret, swID, testNow, body)
	f.Add(swID, ts, good, body)
	f.Add(swID, ts, "v1,AAAA "+good+" v1a,AAAA", body)
	f.Add(swID, "0"+ts, good, body)

	s := newStandardWebhooks(f, fuzzSWSecret)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
		if _, err := s.Verify(h, body); err != nil {
			return
		}
		if standard, svixErr := librariesAccept(t, h, body, fuzzSWSecret); standard != nil || svixErr != nil {
			t.Fatalf("accepted a request that the libraries refuse: %v, %v", standard, svixErr)
		}
	})
}
