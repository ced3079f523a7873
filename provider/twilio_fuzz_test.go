package provider_test

import (
	"testing"

	twilioclient "github.com/twilio/twilio-go/client"
)

// FuzzTwilioRequest checks that nothing verifies that twilio-go's ValidateBody
// refuses, for any query, body and signature.
func FuzzTwilioRequest(f *testing.F) {
	form := []byte(twilioVectorParams.Encode())
	f.Add("foo=1&bar=2", twilioVectorSignature, form)
	f.Add("foo=1&bar=2&bodySHA256="+twilioVectorBodyHash, twilioVectorJSONSig, []byte(`{"property": "value", "boolean": true}`))
	f.Add("", twilioSignature(twilioVectorToken, "https://mycompany.com/myapp.php", []byte("a=1&b=2")), []byte("a=1&b=2"))
	f.Add("", "", []byte(nil))

	v := newTestTwilio(f, "", twilioVectorToken)
	validator := twilioclient.NewRequestValidator(twilioVectorToken)
	f.Fuzz(func(t *testing.T, query, sig string, body []byte) {
		u := "https://mycompany.com/myapp.php"
		if query != "" {
			u += "?" + query
		}
		r := twilioRequest("https://mycompany.com/myapp.php", sig, body)
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
