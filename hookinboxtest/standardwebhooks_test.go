package hookinboxtest_test

import (
	"strings"
	"testing"
	"time"

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

func TestStandardWebhooks_RefusesBadSecret(t *testing.T) {
	t.Parallel()

	_, err := hookinboxtest.StandardWebhooks("whsec_not base64!").SignEvent([]byte(`{}`), time.Now(), "msg_1", "")
	if err == nil || strings.Contains(err.Error(), "not base64!") {
		t.Errorf("SignEvent error = %v, want one that does not quote the secret", err)
	}
}
