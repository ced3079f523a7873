package oracle_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	twilioclient "github.com/twilio/twilio-go/client"

	"github.com/hookinbox/hookinbox/provider"
)

// FuzzTwilioRequest checks that nothing verifies that twilio-go's ValidateBody
// refuses, for any query, body and signature, and that every refusal wraps one of
// provider's sentinels.
func FuzzTwilioRequest(f *testing.F) {
	f.Add("foo=1&bar=2", twilioVectorSignature, twilioVectorForm)
	f.Add("foo=1&bar=2&bodySHA256="+twilioVectorBodyHash, twilioVectorJSONSig, []byte(`{"property": "value", "boolean": true}`))
	f.Add("", twilioSignature(twilioVectorToken, "https://mycompany.com/myapp.php", []byte("a=1&b=2")), []byte("a=1&b=2"))
	f.Add("", "", []byte(nil))

	v := newTwilio(f, twilioVectorToken)
	validator := twilioclient.NewRequestValidator(twilioVectorToken)
	f.Fuzz(func(t *testing.T, query, sig string, body []byte) {
		u := "https://mycompany.com/myapp.php"
		if query != "" {
			u += "?" + query
		}
		r := httptest.NewRequest("POST", "https://mycompany.com/myapp.php", strings.NewReader(string(body)))
		r.Header = headers("X-Twilio-Signature", sig)
		r.RequestURI = u[len("https://mycompany.com"):]
		got, err := v.VerifyRequest(r, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !validator.ValidateBody(u, body, sig) {
			t.Fatalf("accepted %q with %q, which twilio-go refuses", u, sig)
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// checkSentinel fails t unless err wraps one of provider's sentinel errors.
func checkSentinel(t *testing.T, err error) {
	t.Helper()
	for _, sentinel := range []error{provider.ErrMissingSignature, provider.ErrMalformedSignature,
		provider.ErrNoValidSignature, provider.ErrTimestampOutOfTolerance, provider.ErrUnparsableEvent} {
		if errors.Is(err, sentinel) {
			return
		}
	}
	t.Fatalf("Verify error %v wraps no sentinel", err)
}
