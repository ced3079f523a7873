package provider_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// FuzzSlackHeaders checks that nothing verifies that was not signed: whenever Verify
// accepts, the signature is the v0 HMAC of the timestamp as sent and the body.
// (internal/oracle's FuzzSlackHeaders checks that slack-go accepts the same request.)
// Verify checks the timestamp against the real clock, as slack-go does, so seeds made
// now are accepted; seeds from testdata have gone stale and exercise the refusals.
func FuzzSlackHeaders(f *testing.F) {
	body := []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	good := slackSignature(fuzzSecret, ts, body)
	f.Add(ts, good, body)
	f.Add(ts, "v0="+strings.ToUpper(good[3:]), body)
	f.Add("0"+ts, slackSignature(fuzzSecret, "0"+ts, body), body)
	f.Add(ts, good[:40], body)
	f.Add(ts, "v1="+good[3:], body)
	f.Add("+"+ts, good, body)
	f.Add("", "", []byte(nil))

	s := newTestSlack(f, nil, fuzzSecret)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := slackHeader("", "")
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", sig)
		got, err := s.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if want := slackSignature(fuzzSecret, ts, body); "v0="+strings.ToLower(strings.TrimPrefix(sig, "v0=")) != want {
			t.Fatalf("accepted signature %q, want %s", sig, want)
		}
		if got.ID == "" || got.Type == "" || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// FuzzSlackEvent checks the id and type of correctly signed bodies against an
// independent reading: event_id and event.type, or the challenge of a
// url_verification.
func FuzzSlackEvent(f *testing.F) {
	f.Add([]byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`))
	f.Add([]byte(`{"type":"url_verification","challenge":"abc"}`))
	f.Add([]byte(`{"type":"url_verification","challenge":""}`))
	f.Add([]byte(`{"type":"url\u005fverification","challenge":"x"}`))
	f.Add([]byte(`{"event_id":"Ev1","event":{"type":"message","type":""}}`))
	f.Add([]byte(`{"event_id":"Ev1","event":null}`))
	f.Add([]byte(`{"event_id":"Ev1","event":{"type":1}}`))
	f.Add([]byte(`[]`))

	s := newTestSlack(f, fixedNow, fuzzSecret)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := s.Verify(slackSigned(fuzzSecret, testNow, body), body)
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
		challenge, _ := fields["challenge"].(string)
		wantID, _ := fields["event_id"].(string)
		var wantType string
		if event, ok := fields["event"].(map[string]any); ok {
			wantType, _ = event["type"].(string)
		}
		if fields["type"] == "url_verification" {
			wantID, wantType = "url_verification:"+challenge, "url_verification"
		}
		if got.ID != wantID || got.Type != wantType || wantType == "" || wantID == "" || wantID == "url_verification:" {
			t.Fatalf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, wantID, wantType)
		}

		response, ok := s.Challenge(got)
		if ok != (wantType == "url_verification") {
			t.Fatalf("Challenge ok = %t for type %q", ok, wantType)
		}
		if ok {
			var answer map[string]string
			if err := json.Unmarshal(response, &answer); err != nil || answer["challenge"] != challenge || len(answer) != 1 {
				t.Fatalf("Challenge = %s, want the challenge %q", response, challenge)
			}
		}
	})
}
