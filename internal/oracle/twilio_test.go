package oracle_test

import (
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	twilioclient "github.com/twilio/twilio-go/client"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/provider"
)

// The example of twilio-go's own tests (client/request_validator_test.go), which
// provider's tests verify: auth token 12345, this URL, these parameters, and the
// signatures it checks.
const (
	twilioVectorToken     = "12345"
	twilioVectorURL       = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twilioVectorSignature = "vOEb5UThFn24KEfnOFLQY2AE5FY="
	twilioVectorBodyHash  = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	twilioVectorJSONSig   = "a9nBmqA0ju/hNViExpshrM61xv4=" // of twilioVectorURL + "&bodySHA256=" + the hash
)

var twilioVectorForm = []byte(url.Values{
	"Digits": {"1234"}, "CallSid": {"CA1234567890ABCDE"}, "To": {"+18005551212"}, "Caller": {"+14158675309"},
	"From": {"+14158675309"}, "ReasonConferenceEnded": {"test"}, "Reason": {"Participant"},
}.Encode())

// twilioSignature returns the signer's X-Twilio-Signature of form for rawURL,
// whatever URL that is (one with the default port written out).
func twilioSignature(token, rawURL string, form []byte) string {
	h, err := hookinboxtest.Twilio(token, "").SignURL(rawURL, form, time.Now())
	if err != nil {
		panic(err)
	}
	return h.Get("X-Twilio-Signature")
}

func newTwilio(t testing.TB, token string) *provider.Twilio {
	t.Helper()
	v, err := provider.NewTwilio(provider.TwilioConfig{Secrets: []string{token}})
	if err != nil {
		t.Fatalf("NewTwilio: %v", err)
	}
	return v
}

// verifyTwilio runs v on a request to rawURL with signature sig.
func verifyTwilio(v *provider.Twilio, rawURL, sig string, body []byte) error {
	r := httptest.NewRequest("POST", rawURL, strings.NewReader(string(body)))
	r.Header = headers("X-Twilio-Signature", sig)
	_, err := v.VerifyRequest(r, body)
	return err
}

// TestTwilio_VerifierAgreesWithTwilioGo cross-checks verdicts with twilio-go's
// RequestValidator.ValidateBody on the same URL, body and signature.
func TestTwilio_VerifierAgreesWithTwilioGo(t *testing.T) {
	t.Parallel()

	form := twilioVectorForm
	jsonBody := []byte(`{"property": "value", "boolean": true}`)
	jsonURL := twilioVectorURL + "&bodySHA256=" + twilioVectorBodyHash
	withPort := strings.Replace(twilioVectorURL, ".com", ".com:443", 1)
	otherPort := strings.Replace(twilioVectorURL, ".com", ".com:8443", 1)
	changedParam := []byte(strings.Replace(string(form), "Digits=1234", "Digits=1235", 1))
	tests := []struct {
		name, url, sig string
		body           []byte
		wantOK         bool
	}{
		{"form", twilioVectorURL, twilioVectorSignature, form, true},
		{"form, default port added", withPort, twilioVectorSignature, form, true},
		{"form, signed with the default port", twilioVectorURL, twilioSignature(twilioVectorToken, withPort, form), form, true},
		{"form, another port, signed without", otherPort, twilioVectorSignature, form, true},
		{"form, parameter changed", twilioVectorURL, twilioVectorSignature, changedParam, false},
		{"form, query changed", strings.Replace(twilioVectorURL, "foo=1", "foo=2", 1), twilioVectorSignature, form, false},
		{"form, host changed", strings.Replace(twilioVectorURL, "mycompany", "yourcompany", 1), twilioVectorSignature, form, false},
		{"form, scheme changed", strings.Replace(twilioVectorURL, "https", "http", 1), twilioVectorSignature, form, false},
		{"form, wrong token", twilioVectorURL, twilioSignature("54321", twilioVectorURL, form), form, false},
		{"JSON", jsonURL, twilioVectorJSONSig, jsonBody, true},
		{"JSON, body changed", jsonURL, twilioVectorJSONSig, []byte(`{"property": "value", "boolean": false}`), false},
		{"JSON without bodySHA256", twilioVectorURL, twilioVectorSignature, jsonBody, false},
	}
	v := newTwilio(t, twilioVectorToken)
	validator := twilioclient.NewRequestValidator(twilioVectorToken)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			ours := verifyTwilio(v, tt.url, tt.sig, tt.body)
			theirs := validator.ValidateBody(tt.url, tt.body, tt.sig)
			if (ours == nil) != tt.wantOK || theirs != tt.wantOK {
				t.Errorf("ours: %v, twilio-go: %t, want ok %t", ours, theirs, tt.wantOK)
			}
		})
	}
}

func TestTwilio_SignerAcceptedByTwilioGo(t *testing.T) {
	t.Parallel()

	validator := twilioclient.NewRequestValidator("auth_token")
	form := []byte(url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"delivered"}, "To": {"+15005550006"}}.Encode())
	target := "https://hooks.example.com/twilio?tenant=7"
	req, err := hookinboxtest.NewRequest(target, hookinboxtest.Twilio("auth_token", ""), form)
	if err != nil {
		t.Fatal(err)
	}
	if !validator.ValidateBody(target, form, req.Header.Get("X-Twilio-Signature")) {
		t.Error("twilio-go refuses the form request")
	}

	// Behind a proxy: sent to the internal URL, signed for the public one.
	internal := "http://127.0.0.1:8080/twilio?tenant=7"
	req, err = hookinboxtest.NewRequest(internal, hookinboxtest.Twilio("auth_token", "https://hooks.example.com/twilio"), form)
	if err != nil {
		t.Fatal(err)
	}
	if !validator.ValidateBody(target, form, req.Header.Get("X-Twilio-Signature")) {
		t.Error("twilio-go refuses the request signed for the public URL")
	}

	body := []byte(`{"event":"x"}`)
	jsonURL := hookinboxtest.TwilioJSONURL(target, body)
	req, err = hookinboxtest.NewRequest(jsonURL, hookinboxtest.Twilio("auth_token", ""), body)
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := io.ReadAll(req.Body)
	if !validator.ValidateBody(jsonURL, sent, req.Header.Get("X-Twilio-Signature")) {
		t.Error("twilio-go refuses the JSON request")
	}
}
