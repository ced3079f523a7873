package hookinboxtest_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// NewRequest sends a form as a form, and Sign, which has no URL to sign, refuses.
// (internal/oracle checks that twilio-go accepts the signatures, of forms and JSON,
// direct and behind a proxy.)
func TestTwilio_FormContentTypeAndURLRequired(t *testing.T) {
	t.Parallel()

	form := []byte(url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"delivered"}, "To": {"+15005550006"}}.Encode())
	req, err := hookinboxtest.NewRequest("https://hooks.example.com/twilio?tenant=7", hookinboxtest.Twilio("auth_token", ""), form)
	if err != nil {
		t.Fatal(err)
	}
	if ct := req.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type = %v", ct)
	}
	if _, err := hookinboxtest.Twilio("auth_token", "").Sign(form, time.Now()); err == nil {
		t.Error("Sign without a URL: no error")
	}
}
