package hookinboxtest_test

import (
	"io"
	"net/url"
	"testing"
	"time"

	twilioclient "github.com/twilio/twilio-go/client"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

func TestTwilio_AcceptedByTwilioGo(t *testing.T) {
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
	if ct := req.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type = %v", ct)
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
	if _, err := hookinboxtest.Twilio("auth_token", "").Sign(form, time.Now()); err == nil {
		t.Error("Sign without a URL: no error")
	}
}
