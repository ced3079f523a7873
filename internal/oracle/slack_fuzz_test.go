package oracle_test

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzSlackHeaders checks that whatever provider.Slack accepts, slack-go accepts
// too: the oracle half of provider's FuzzSlackHeaders, whose seeds it shares. Both
// check the timestamp against the real clock, so seeds made now are accepted; seeds
// from testdata have gone stale and exercise the refusals.
func FuzzSlackHeaders(f *testing.F) {
	body := []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	good := slackSignature(fuzzSecret, ts, body)
	f.Add(ts, good, body)
	f.Add(ts, "v0="+strings.ToUpper(good[3:]), body)
	f.Add("0"+ts, slackSignature(fuzzSecret, "0"+ts, body), body)

	s := newSlack(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := slackHeader("", "")
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", sig)
		if _, err := s.Verify(h, body); err != nil {
			return
		}
		if err := slackGoAccepts(h, body, fuzzSecret); err != nil {
			t.Fatalf("accepted a request that slack-go refuses: %v", err)
		}
	})
}
