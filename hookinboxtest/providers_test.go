package hookinboxtest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
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

			got, err := signAndVerify(tt.provider, tt.secret, tt.verifier, tt.url, []byte(tt.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.wantID != "" && got.ID != tt.wantID) || got.Type != tt.wantTy {
				t.Errorf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, tt.wantID, tt.wantTy)
			}
		})
	}
}

// signAndVerify signs body as SignerFor's signer does (for url, or a default one;
// with an id and a type of its own in headers when the scheme sends them there and
// body has none) and
// verifies it with v, or with provider.New when v is nil.
func signAndVerify(scheme, secret string, opts provider.Options, url string, body []byte, v provider.Verifier) (provider.Verified, error) {
	s, err := hookinboxtest.SignerFor(scheme, []string{secret}, opts.Params)
	if err != nil {
		return provider.Verified{}, err
	}
	if url == "" {
		url = "http://127.0.0.1:1/hook"
	}
	var h http.Header
	req, err := hookinboxtest.NewRequest(url, s, body)
	if err == nil {
		h = req.Header
	} else if es, ok := s.(hookinboxtest.EventSigner); ok { // no id or type in body to send
		h, err = es.SignEvent(body, time.Now(), "id-1", "thing.happened")
	}
	if err != nil {
		return provider.Verified{}, err
	}
	if v == nil {
		if v, err = provider.New(scheme, opts); err != nil {
			return provider.Verified{}, err
		}
	}
	if rv, ok := v.(provider.RequestVerifier); ok {
		r := httptest.NewRequest("POST", url, nil)
		r.Header = h
		return rv.VerifyRequest(r, body)
	}
	return v.Verify(h, body)
}

// claimsJSON is the broken variant of a verifier's BodyIsJSON: it says so of every
// body it verifies, JSON or not.
type claimsJSON struct{ provider.Verifier }

func (c claimsJSON) Verify(h http.Header, body []byte) (provider.Verified, error) {
	v, err := c.Verifier.Verify(h, body)
	v.BodyIsJSON = true
	return v, err
}

// bodyIsJSONHolds is what a receiver relies on when it skips its own check:
// BodyIsJSON only of valid JSON.
func bodyIsJSONHolds(v provider.Verified, err error) error {
	if err == nil && v.BodyIsJSON && !json.Valid(v.Body) {
		return fmt.Errorf("BodyIsJSON of a body that is not JSON: %q", v.Body)
	}
	return nil
}

// TestVerified_BodyIsJSONOnlyOfJSON checks every scheme's BodyIsJSON, which lets
// receiving skip its own JSON check: true of the event bodies of every scheme whose
// verifier parses the body (all but Shopify's and hmac's with the id and type in
// headers), and never true of a body that is not JSON, which those schemes refuse
// and the others verify.
func TestVerified_BodyIsJSONOnlyOfJSON(t *testing.T) {
	t.Parallel()

	sendgridPublic, err := hookinboxtest.SendGridPublicKey(sendgridTestKey)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	linear := func(rest string) string {
		return `{"id":"d-1","type":"Issue","action":"create",` + rest + `"webhookTimestamp":` + strconv.FormatInt(now.UnixMilli(), 10) + `}`
	}
	sw := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	tests := []struct {
		provider, secret string
		verifier         provider.Options
		url              string
		jsonURL          bool // Twilio's URL for a JSON body, with its bodySHA256
		body, notJSON    string
		wantJSON         bool
	}{
		{"stripe", "whsec_s", provider.Options{Secrets: []string{"whsec_s"}}, "", false, `{"id":"evt_1","type":"invoice.paid"}`, `{"id":"evt_1","type":"invoice.paid"`, true},
		{"github", "gh", provider.Options{Secrets: []string{"gh"}}, "", false, `{"action":"opened"}`, `{"action":"opened"`, true},
		{"shopify", "sh", provider.Options{Secrets: []string{"sh"}}, "", false, `{"id":1}`, `id=1`, false},
		{"slack", "sl", provider.Options{Secrets: []string{"sl"}}, "", false, `{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`, `{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}`, true},
		{"standardwebhooks", sw, provider.Options{Secrets: []string{sw}}, "", false, `{"type":"user.created"}`, `{"type":"user.created"}}`, true},
		{"svix", sw, provider.Options{Secrets: []string{sw}}, "", false, `{"type":"user.created"}`, `{"type":"user.created"]`, true},
		{"hmac", "hm", provider.Options{Secrets: []string{"hm"}, Params: map[string]string{"header": "X-Signature"}}, "", false, `{"id":"g-1","type":"t"}`, `{"id":"g-1","type":"t",}`, true},
		{"discord", privateKeys()["discord"], provider.Options{PublicKeys: []string{hookinboxtest.DiscordPublicKey(discordTestKey)}}, "", false, `{"id":"1","type":2}`, `{"id":"1","type":2`, true},
		{"sendgrid", privateKeys()["sendgrid"], provider.Options{PublicKeys: []string{sendgridPublic}}, "", false, `[{"event":"open","sg_event_id":"sg1"}]`, `[{"event":"open","sg_event_id":"sg1"}`, true},
		{"twilio", "tok", provider.Options{Secrets: []string{"tok"}}, "http://127.0.0.1:1/twilio?x=1", false, "CallSid=CA1&CallStatus=ringing", "", true},
		{"square", "key", provider.Options{Secrets: []string{"key"}}, "http://127.0.0.1:1/square", false, `{"event_id":"e1","type":"payment.created"}`, `{"event_id":"e1","type":"payment.created"`, true},
		{"paddle", "pdl", provider.Options{Secrets: []string{"pdl"}}, "", false, `{"event_id":"evt_1","event_type":"transaction.paid"}`, `{"event_id":"evt_1","event_type":"transaction.paid"`, true},
		{"linear", "lin", provider.Options{Secrets: []string{"lin"}}, "", false, linear(""), linear(`"x":,`), true},
		{"zoom", "zm", provider.Options{Secrets: []string{"zm"}}, "", false, `{"event":"meeting.ended","event_ts":1,"payload":{}}`, `{"event":"meeting.ended","event_ts":1,"payload":{}`, true},
		{"gitlab", "gl", provider.Options{Secrets: []string{"gl"}}, "", false, `{"object_kind":"push"}`, `{"object_kind":"push"`, true},
		// The hmac scheme with the id and type in headers does not parse the body.
		{"hmac", "hm", provider.Options{Secrets: []string{"hm"}, Params: map[string]string{"header": "X-Signature", "id_header": "X-Id", "type_header": "X-Type"}},
			"", false, `{"a":1}`, `id=1`, false},
		// Twilio's JSON bodies are signed through the URL's bodySHA256.
		{"twilio", "tok", provider.Options{Secrets: []string{"tok"}}, "http://127.0.0.1:1/twilio", true, `{"CallSid":"CA1","CallStatus":"ringing"}`, `{"CallSid":"CA1"`, true},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.provider] = true
	}
	for _, name := range hookinboxtest.Names() {
		if !covered[name] {
			t.Errorf("no case for the scheme %s", name)
		}
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()

			url := func(body string) string {
				if tt.jsonURL {
					return hookinboxtest.TwilioJSONURL(tt.url, []byte(body))
				}
				return tt.url
			}
			got, err := signAndVerify(tt.provider, tt.secret, tt.verifier, url(tt.body), []byte(tt.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.BodyIsJSON != tt.wantJSON {
				t.Errorf("BodyIsJSON = %v, want %v", got.BodyIsJSON, tt.wantJSON)
			}
			if err := bodyIsJSONHolds(got, nil); err != nil {
				t.Error(err)
			}
			if tt.notJSON == "" {
				return // Twilio's forms are given as the JSON of their parameters
			}
			got, err = signAndVerify(tt.provider, tt.secret, tt.verifier, url(tt.notJSON), []byte(tt.notJSON), nil)
			if err := bodyIsJSONHolds(got, err); err != nil {
				t.Error(err)
			}
			if tt.wantJSON && err == nil {
				t.Errorf("a signed body that is not JSON verified: %+v", got)
			}
		})
	}
}

// TestBrokenClaimsJSON_Caught: a verifier that says BodyIsJSON of what it did not
// check is caught by the check above on Shopify's scheme, which verifies bodies that
// are not JSON.
func TestBrokenClaimsJSON_Caught(t *testing.T) {
	t.Parallel()

	opts := provider.Options{Secrets: []string{"sh"}}
	v, err := provider.New("shopify", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := bodyIsJSONHolds(signAndVerify("shopify", "sh", opts, "", []byte("id=1"), claimsJSON{v})); err == nil {
		t.Fatal("the broken verifier's claim was not caught")
	}
}

// TestVerified_BodyIsJSONOfEachBatchItem: SendGrid's batches give each event its own
// JSON as Body, checked, and a batch with an item that is not an object is refused.
func TestVerified_BodyIsJSONOfEachBatchItem(t *testing.T) {
	t.Parallel()

	public, err := hookinboxtest.SendGridPublicKey(sendgridTestKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := provider.New("sendgrid", provider.Options{PublicKeys: []string{public}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := hookinboxtest.SignerFor("sendgrid", []string{privateKeys()["sendgrid"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(body string) ([]provider.Verified, error) {
		h, err := s.Sign([]byte(body), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return v.(provider.BatchVerifier).VerifyBatch(h, []byte(body))
	}
	items, err := verify(`[{"event":"open","sg_event_id":"a"}, {"event":"click","sg_event_id":"b","url":"x"}]`)
	if err != nil || len(items) != 2 {
		t.Fatalf("VerifyBatch = %d items, %v", len(items), err)
	}
	for _, item := range items {
		if !item.BodyIsJSON || !json.Valid(item.Body) || item.Body[0] != '{' {
			t.Errorf("item %s: BodyIsJSON %v of %q, want true of its own object", item.ID, item.BodyIsJSON, item.Body)
		}
	}
	if items, err := verify(`[{"event":"open","sg_event_id":"a"}, 1]`); err == nil {
		t.Errorf("a batch with an item that is not an object verified: %+v", items)
	}
}
