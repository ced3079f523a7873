package provider_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/internal/tamper"
	"github.com/hookinbox/hookinbox/provider"
)

// The example of twilio-go's own tests (client/request_validator_test.go): auth
// token 12345, this URL, these parameters, and the signatures it checks.
const (
	twilioVectorToken     = "12345"
	twilioVectorURL       = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twilioVectorSignature = "vOEb5UThFn24KEfnOFLQY2AE5FY="
	twilioVectorBodyHash  = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	twilioVectorJSONSig   = "a9nBmqA0ju/hNViExpshrM61xv4=" // of twilioVectorURL + "&bodySHA256=" + the hash
)

var twilioVectorParams = url.Values{
	"Digits": {"1234"}, "CallSid": {"CA1234567890ABCDE"}, "To": {"+18005551212"}, "Caller": {"+14158675309"},
	"From": {"+14158675309"}, "ReasonConferenceEnded": {"test"}, "Reason": {"Participant"},
}

// twilioPublicURL is the URL the test verifiers are configured with.
const twilioPublicURL = "https://hooks.example.com/webhooks/twilio"

// twilioBody is a message status callback with a marker in a parameter.
var twilioBody = []byte(url.Values{
	"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "MessageStatus": {"delivered"},
	"AccountSid": {"AC0123456789abcdef0123456789abcdef"}, "Body": {testBodyMarker}, "To": {"+15005550006"},
}.Encode())

// twilioSignature computes X-Twilio-Signature from its definition.
func twilioSignature(token, rawURL string, form []byte) string {
	values, err := url.ParseQuery(string(form))
	if err != nil {
		panic(err)
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(rawURL))
	for _, k := range names {
		mac.Write([]byte(k + values.Get(k)))
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func twilioHeader(sig string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Twilio-Signature", sig)
	}
	return h
}

func newTestTwilio(t testing.TB, publicURL string, secrets ...string) *provider.Twilio {
	t.Helper()
	v, err := provider.NewTwilio(provider.TwilioConfig{Secrets: secrets, PublicURL: publicURL})
	if err != nil {
		t.Fatalf("NewTwilio: %v", err)
	}
	return v
}

// twilioRequest is a request as the server receives it at rawURL.
func twilioRequest(rawURL string, sig string, body []byte) *http.Request {
	r := httptest.NewRequest("POST", rawURL, strings.NewReader(string(body)))
	r.Header = twilioHeader(sig)
	return r
}

func TestTwilioNameAndRetryWindow(t *testing.T) {
	t.Parallel()

	var v provider.Verifier = newTestTwilio(t, "", testSecret)
	if v.Name() != "twilio" || v.RetryWindow() <= 0 {
		t.Errorf("Name, RetryWindow = %q, %s", v.Name(), v.RetryWindow())
	}
}

func TestTwilioPublishedVectors(t *testing.T) {
	t.Parallel()

	v := newTestTwilio(t, "", twilioVectorToken)
	form := []byte(twilioVectorParams.Encode())
	got, err := v.VerifyRequest(twilioRequest(twilioVectorURL, twilioVectorSignature, form), form)
	if err != nil {
		t.Fatalf("form vector: %v", err)
	}
	if !strings.HasPrefix(got.ID, "CA1234567890ABCDE:") || len(got.ID) != len("CA1234567890ABCDE:")+32 || got.Type != "call" {
		t.Errorf("form vector: ID, Type = %q, %q", got.ID, got.Type)
	}
	if string(got.Body) != `{"CallSid":"CA1234567890ABCDE","Caller":"+14158675309","Digits":"1234","From":"+14158675309","Reason":"Participant","ReasonConferenceEnded":"test","To":"+18005551212"}` {
		t.Errorf("form vector: payload %s", got.Body)
	}

	jsonBody := []byte(`{"property": "value", "boolean": true}`)
	jsonURL := twilioVectorURL + "&bodySHA256=" + twilioVectorBodyHash
	got, err = v.VerifyRequest(twilioRequest(jsonURL, twilioVectorJSONSig, jsonBody), jsonBody)
	if err != nil {
		t.Fatalf("JSON vector: %v", err)
	}
	if string(got.Body) != string(jsonBody) || got.Type != "request" || len(got.ID) != 64 {
		t.Errorf("JSON vector: %+v", got)
	}
}

// Behind a proxy the URL the server sees is not the one Twilio signed: the
// configured public URL is, with the request's query.
func TestTwilioPublicURL(t *testing.T) {
	t.Parallel()

	signedURL := twilioPublicURL + "?tenant=7"
	sig := twilioSignature(testSecret, signedURL, twilioBody)
	internal := "http://10.0.0.5:8080/twilio?tenant=7"

	if _, err := newTestTwilio(t, "", testSecret).VerifyRequest(twilioRequest(internal, sig, twilioBody), twilioBody); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("without public_url: %v, want %v", err, provider.ErrNoValidSignature)
	}
	v := newTestTwilio(t, twilioPublicURL, testSecret)
	got, err := v.VerifyRequest(twilioRequest(internal, sig, twilioBody), twilioBody)
	if err != nil {
		t.Fatalf("with public_url: %v", err)
	}
	if got.Type != "message.delivered" || !strings.HasPrefix(got.ID, "SM0123456789abcdef0123456789abcdef:") {
		t.Errorf("ID, Type = %q, %q", got.ID, got.Type)
	}
	// Verify, without the request, signs the public URL alone.
	if _, err := v.Verify(twilioHeader(twilioSignature(testSecret, twilioPublicURL, twilioBody)), twilioBody); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if _, err := newTestTwilio(t, "", testSecret).Verify(twilioHeader(sig), twilioBody); !errors.Is(err, provider.ErrNoValidSignature) {
		t.Errorf("Verify without public_url: %v", err)
	}
}

// The derived id is the same for every retry and differs with any parameter.
func TestTwilioDerivedID(t *testing.T) {
	t.Parallel()

	v := newTestTwilio(t, twilioPublicURL, testSecret)
	verify := func(body []byte) provider.Verified {
		t.Helper()
		got, err := v.Verify(twilioHeader(twilioSignature(testSecret, twilioPublicURL, body)), body)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first, again := verify(twilioBody), verify(twilioBody)
	reordered := verify([]byte("To=%2B15005550006&" + strings.Replace(string(twilioBody), "&To=%2B15005550006", "", 1)))
	sent := verify([]byte(strings.Replace(string(twilioBody), "delivered", "sent", 1)))
	if first.ID != again.ID || first.ID != reordered.ID {
		t.Errorf("retries differ: %q, %q, %q", first.ID, again.ID, reordered.ID)
	}
	if sent.ID == first.ID || sent.Type != "message.sent" {
		t.Errorf("status change %q %q, first %q", sent.ID, sent.Type, first.ID)
	}
	recording := verify([]byte("CallSid=CA1&RecordingSid=RE1&RecordingStatus=completed"))
	if recording.Type != "recording.completed" || !strings.HasPrefix(recording.ID, "RE1:") {
		t.Errorf("recording callback: %q %q", recording.ID, recording.Type)
	}
}

func TestTwilioRejects(t *testing.T) {
	t.Parallel()

	testRejections(t, newTestTwilio(t, twilioPublicURL, testSecret), twilioRejections(), testSecret, testBodyMarker)
}

func twilioRejections() []rejection {
	good := twilioSignature(testSecret, twilioPublicURL, twilioBody)
	h := twilioHeader
	twoSigs := h(good)
	twoSigs.Add("X-Twilio-Signature", good)
	return []rejection{
		{"no header", http.Header{}, twilioBody, provider.ErrMissingSignature},
		{"two signature headers", twoSigs, twilioBody, provider.ErrMalformedSignature},
		{"wrong token", h(twilioSignature(otherSecret, twilioPublicURL, twilioBody)), twilioBody, provider.ErrNoValidSignature},
		{"signed for another URL", h(twilioSignature(testSecret, twilioPublicURL+"x", twilioBody)), twilioBody, provider.ErrNoValidSignature},
		{"truncated signature", h(good[:27]), twilioBody, provider.ErrNoValidSignature},
		{"last character changed", h(good[:26] + string(rune(good[26]^1)) + "="), twilioBody, provider.ErrNoValidSignature},
		{"one byte changed in body", h(good), tamper.OneByteChanged(twilioBody, testBodyMarker), provider.ErrNoValidSignature},
		{"parameter added", h(good), append([]byte("Extra=1&"), twilioBody...), provider.ErrNoValidSignature},
		{"empty body", h(good), nil, provider.ErrNoValidSignature},
		{"repeated parameter", h(good), append(append([]byte{}, twilioBody...), []byte("&To=%2B1")...), provider.ErrUnparsableEvent},
		{"not form-encoded", h(good), []byte("a=%zz"), provider.ErrUnparsableEvent},
	}
}

func TestTwilioRotation(t *testing.T) {
	t.Parallel()

	v := newTestTwilio(t, twilioPublicURL, otherSecret, testSecret)
	for i, secret := range []string{otherSecret, testSecret} {
		got, err := v.Verify(twilioHeader(twilioSignature(secret, twilioPublicURL, twilioBody)), twilioBody)
		if err != nil || got.SecretIndex != i {
			t.Errorf("token %d: SecretIndex %d, error %v", i, got.SecretIndex, err)
		}
	}
}

func TestNewTwilioRefusesBadPublicURL(t *testing.T) {
	t.Parallel()

	for _, u := range []string{"hooks.example.com/x", "ftp://h/x", "https:///x", "https://h/x?a=1", "https://h/x#f", "https://u:p@h/x"} {
		if _, err := provider.NewTwilio(provider.TwilioConfig{Secrets: []string{testSecret}, PublicURL: u}); err == nil {
			t.Errorf("NewTwilio(public_url %q) accepted", u)
		}
	}
}
