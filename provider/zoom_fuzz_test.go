package provider_test

import (
	"strings"
	"testing"
)

// FuzzZoomHeaders checks that nothing verifies that was not signed: whenever Verify
// accepts, the signature is the v0 HMAC of the timestamp as sent and the body.
func FuzzZoomHeaders(f *testing.F) {
	body := []byte(`{"event":"meeting.ended","event_ts":1700000000000,"payload":{}}`)
	ts := "1700000000"
	good := zoomSignature(fuzzSecret, ts, body)
	f.Add(ts, good, body)
	f.Add(ts, "v0="+strings.ToUpper(good[3:]), body)
	f.Add("0"+ts, zoomSignature(fuzzSecret, "0"+ts, body), body)
	f.Add(ts, good[:40], body)
	f.Add("", "", []byte(nil))

	v := newTestZoom(f, fixedNow, fuzzSecret)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		got, err := v.Verify(zoomHeader(ts, sig), body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if "v0="+strings.ToLower(strings.TrimPrefix(sig, "v0=")) != zoomSignature(fuzzSecret, ts, body) {
			t.Fatalf("accepted signature %q", sig)
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v", got)
		}
	})
}
