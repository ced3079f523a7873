package hookinboxtest_test

import (
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// TestSignerFor_VerifiedByTheNewProviders signs with SignerFor, as `hookinbox send`
// does, and verifies with provider.New for the schemes of public keys, of URLs and
// of timestamps in the body: what send sends, the receiver accepts.
func TestSignerFor_VerifiedByTheNewProviders(t *testing.T) {
	t.Parallel()

	sendgridPublic, err := hookinboxtest.SendGridPublicKey(sendgridTestKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	linearBody := `{"id":"d-1","type":"Issue","action":"create","webhookTimestamp":` + strconv.FormatInt(now.UnixMilli(), 10) + `}`
	tests := []struct {
		provider       string
		secret         string
		verifier       provider.Options
		body, url      string
		wantID, wantTy string
	}{
		{"discord", privateKeys()["discord"], provider.Options{PublicKeys: []string{hookinboxtest.DiscordPublicKey(discordTestKey)}},
			`{"id":"1","type":2}`, "", "1", "application_command"},
		{"sendgrid", privateKeys()["sendgrid"], provider.Options{PublicKeys: []string{sendgridPublic}},
			`[{"event":"open","sg_event_id":"sg1"}]`, "", "sg1", "open"},
		{"twilio", "tok", provider.Options{Secrets: []string{"tok"}},
			"CallSid=CA1&CallStatus=ringing", "http://127.0.0.1:1/twilio?x=1", "", "call.ringing"},
		{"square", "key", provider.Options{Secrets: []string{"key"}},
			`{"event_id":"e1","type":"payment.created"}`, "http://127.0.0.1:1/square", "e1", "payment.created"},
		{"paddle", "pdl", provider.Options{Secrets: []string{"pdl"}},
			`{"event_id":"evt_1","event_type":"transaction.paid"}`, "", "evt_1", "transaction.paid"},
		{"linear", "lin", provider.Options{Secrets: []string{"lin"}}, linearBody, "", "d-1", "Issue.create"},
		{"zoom", "zm", provider.Options{Secrets: []string{"zm"}},
			`{"event":"meeting.ended","event_ts":1,"payload":{}}`, "", "", "meeting.ended"},
		{"gitlab", "gl", provider.Options{Secrets: []string{"gl"}},
			`{"id":"u-1","type":"Push Hook"}`, "", "u-1", "Push Hook"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()

			s, err := hookinboxtest.SignerFor(tt.provider, []string{tt.secret}, nil)
			if err != nil {
				t.Fatal(err)
			}
			target := tt.url
			if target == "" {
				target = "http://127.0.0.1:1/hook"
			}
			req, err := hookinboxtest.NewRequest(target, s, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(req.Body)
			v, err := provider.New(tt.provider, tt.verifier)
			if err != nil {
				t.Fatal(err)
			}
			var got provider.Verified
			if rv, ok := v.(provider.RequestVerifier); ok {
				r := httptest.NewRequest("POST", target, nil)
				r.Header = req.Header
				got, err = rv.VerifyRequest(r, body)
			} else {
				got, err = v.Verify(req.Header, body)
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if (tt.wantID != "" && got.ID != tt.wantID) || got.Type != tt.wantTy {
				t.Errorf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, tt.wantID, tt.wantTy)
			}
		})
	}
}
