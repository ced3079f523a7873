package oracle_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// The official libraries of Discord, SendGrid and Paddle (this one as configured by
// default) check the signature and no timestamp: each accepts a delivery signed just
// past the tolerance, which the verifier refuses. provider's broken-variant tests
// keep the same bug as test-only code ("signature alone") and show that the "too
// old" case of each rejection table catches it; this is the evidence that the bug is
// the libraries'. Each library accepts the same delivery signed now.
func TestLibrariesAlone_AcceptTooOldDeliveries(t *testing.T) {
	t.Parallel()

	tooOld := testNow.Add(-provider.DefaultTolerance - time.Second)
	sendgridPublicKey := sendgridPublic(sendgridKey)
	for _, tt := range []struct {
		library  string
		verifier provider.Verifier
		body     []byte
		signed   func(at time.Time) http.Header
		accepts  func(h http.Header, body []byte) bool
	}{
		{"discordgo", newDiscord(t, discordKey), discordBody,
			func(at time.Time) http.Header { return discordSigned(discordKey, at, discordBody) },
			func(h http.Header, body []byte) bool { return discordgoAccepts(h, body, discordKey) }},
		{"sendgrid-go", newSendGrid(t, sendgridPublicKey), sendgridBody,
			func(at time.Time) http.Header { return sendgridSigned(sendgridKey, at, sendgridBody) },
			func(h http.Header, body []byte) bool { return sendgridGoAccepts(h, body, sendgridPublicKey) }},
		{"paddle-go-sdk", newPaddle(t, testSecret), paddleBody,
			func(at time.Time) http.Header { return paddleSigned(testSecret, at, paddleBody) },
			func(h http.Header, body []byte) bool { return paddleSDKAccepts(h, body, testSecret) }},
	} {
		t.Run(tt.library, func(t *testing.T) {
			t.Parallel()

			if !tt.accepts(tt.signed(testNow), tt.body) {
				t.Errorf("%s refuses a delivery signed now", tt.library)
			}
			old := tt.signed(tooOld)
			if !tt.accepts(old, tt.body) {
				t.Errorf("%s refuses a delivery signed %s ago: it checks the timestamp after all", tt.library, provider.DefaultTolerance+time.Second)
			}
			if _, err := tt.verifier.Verify(old, tt.body); !errors.Is(err, provider.ErrTimestampOutOfTolerance) {
				t.Errorf("the verifier: %v, want %v", err, provider.ErrTimestampOutOfTolerance)
			}
		})
	}
}
