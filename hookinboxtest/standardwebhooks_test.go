package hookinboxtest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	svix "github.com/svix/svix-webhooks/go"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

const (
	swSecret      = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swOtherSecret = "whsec_aG9va2luYm94LW90aGVyLWtleS0yMDI0"
)

// The Standard Webhooks specification's published example.
func TestStandardWebhooks_PublishedVector(t *testing.T) {
	t.Parallel()

	h, err := hookinboxtest.StandardWebhooks(swSecret).SignEvent([]byte(`{"test": 2432232314}`),
		time.Unix(1614265330, 0), "msg_p5jXN8AQM9LWM0D4loKWxJek", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("webhook-signature = %s, want %s", got, want)
	}
	if h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" || h.Get("webhook-timestamp") != "1614265330" {
		t.Errorf("headers = %v", h)
	}
}

// Both official libraries accept what the signers sign, under each secret of a
// rotation.
func TestStandardWebhooks_AcceptedByLibraries(t *testing.T) {
	t.Parallel()

	body := []byte(`{"id":"msg_1","type":"invoice.paid","data":{}}`)
	unprefixed := strings.TrimPrefix(swOtherSecret, "whsec_")
	standard, err := hookinboxtest.StandardWebhooks(swSecret, unprefixed).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	svixed, err := hookinboxtest.Svix(swSecret, unprefixed).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if standard.Get("webhook-id") != "msg_1" || svixed.Get("svix-id") != "msg_1" || svixed.Get("webhook-id") != "" {
		t.Errorf("headers = %v and %v", standard, svixed)
	}
	for _, secret := range []string{swSecret, swOtherSecret} {
		sw, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Verify(body, standard); err != nil {
			t.Errorf("standard-webhooks library, secret %s: %v", secret, err)
		}
		sv, err := svix.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]http.Header{"webhook-*": standard, "svix-*": svixed} {
			if err := sv.Verify(body, h); err != nil {
				t.Errorf("svix library, %s headers, secret %s: %v", name, secret, err)
			}
		}
	}
}

func TestStandardWebhooks_RefusesBadSecret(t *testing.T) {
	t.Parallel()

	_, err := hookinboxtest.StandardWebhooks("whsec_not base64!").SignEvent([]byte(`{}`), time.Now(), "msg_1", "")
	if err == nil || strings.Contains(err.Error(), "not base64!") {
		t.Errorf("SignEvent error = %v, want one that does not quote the secret", err)
	}
}
