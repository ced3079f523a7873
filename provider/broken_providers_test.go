package provider_test

// Broken variants of the schemes added after the first five, each run against its
// scheme's rejection table as in broken_test.go: the table must catch the bug.

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// brokenGitLabPrefix accepts a token that is a prefix of the secret: a comparison
// over the length of what was sent.
type brokenGitLabPrefix struct{ secret string }

func (brokenGitLabPrefix) Name() string               { return "gitlab" }
func (brokenGitLabPrefix) RetryWindow() time.Duration { return time.Hour }

func (b brokenGitLabPrefix) Verify(h http.Header, body []byte) (provider.Verified, error) {
	token := h.Get("X-Gitlab-Token")
	if token == "" {
		return provider.Verified{}, provider.ErrMissingSignature
	}
	if !strings.HasPrefix(b.secret, token) {
		return provider.Verified{}, provider.ErrNoValidSignature
	}
	return provider.Verified{ID: "x", Type: "x", Body: body}, nil
}

// brokenSquareBodyOnly signs the body without the notification URL, so a
// notification for another subscription with the same key verifies.
type brokenSquareBodyOnly struct{ secret string }

func (brokenSquareBodyOnly) Name() string               { return "square" }
func (brokenSquareBodyOnly) RetryWindow() time.Duration { return time.Hour }

func (b brokenSquareBodyOnly) Verify(h http.Header, body []byte) (provider.Verified, error) {
	sig := h.Get("X-Square-Hmacsha256-Signature")
	if sig == "" {
		return provider.Verified{}, provider.ErrMissingSignature
	}
	if !hmac.Equal([]byte(sig), []byte(squareSignature(b.secret, "", body))) {
		return provider.Verified{}, provider.ErrNoValidSignature
	}
	return provider.Verified{ID: "x", Type: "x", Body: body}, nil
}

// signatureOnly checks a scheme's signature and no timestamp, as the providers' own
// libraries do (discordgo, sendgrid-go, paddle-go-sdk by default; internal/oracle
// shows each accepting a delivery the rejection tables call too old): a captured
// delivery verifies forever.
type signatureOnly struct {
	name   string
	verify func(h http.Header, body []byte) bool
}

func (l signatureOnly) Name() string             { return l.name }
func (signatureOnly) RetryWindow() time.Duration { return time.Hour }

func (l signatureOnly) Verify(h http.Header, body []byte) (provider.Verified, error) {
	if !l.verify(h, body) {
		return provider.Verified{}, provider.ErrNoValidSignature
	}
	return provider.Verified{ID: "x", Type: "x", Body: body}, nil
}

var (
	discordNoTimestamp = signatureOnly{"discord", func(h http.Header, body []byte) bool {
		return discordSignedBy(discordKey, h, body)
	}}
	sendgridNoTimestamp = signatureOnly{"sendgrid", func(h http.Header, body []byte) bool {
		return sendgridSignedBy(&sendgridKey.PublicKey, h, body)
	}}
	paddleNoTimestamp = signatureOnly{"paddle", func(h http.Header, body []byte) bool {
		return paddleSignedBy(testSecret, h, body)
	}}
	// linearNoTimestamp checks Linear's signature and never reads webhookTimestamp.
	linearNoTimestamp = signatureOnly{"linear", func(h http.Header, body []byte) bool {
		return hmac.Equal([]byte(h.Get("Linear-Signature")), []byte(hexMAC(sha256.New, testSecret, body)))
	}}
)

func TestProviderRejectionTablesCatchBrokenVerifiers(t *testing.T) {
	t.Parallel()

	testBrokenCaught(t, []brokenCase{
		{"token compared over the sent length", brokenGitLabPrefix{testSecret}, gitlabRejections(), "prefix of the token"},
		{"notification URL not signed", brokenSquareBodyOnly{testSecret}, squareRejections(), "body alone signed"},
		{"Discord's signature alone: no timestamp check", discordNoTimestamp, discordRejections(), "too old"},
		{"SendGrid's signature alone: no timestamp check", sendgridNoTimestamp, sendgridRejections(), "too old"},
		{"Paddle's signature alone: no timestamp check", paddleNoTimestamp, paddleRejections(), "too old"},
		{"Linear's webhookTimestamp not checked", linearNoTimestamp, linearRejections(), "too old"},
	})
}

// The broken variants accept correctly signed requests: what the tables catch is
// the bug, not a verifier that refuses everything.
func TestProviderBrokenVerifiersVerifyGoodRequests(t *testing.T) {
	t.Parallel()

	linear := linearBody(testNow)
	for _, tt := range []struct {
		v    provider.Verifier
		h    http.Header
		body []byte
	}{
		{brokenGitLabPrefix{testSecret}, gitlabHeader(testSecret), gitlabBody},
		{brokenSquareBodyOnly{testSecret}, squareHeader(squareSignature(testSecret, "", squareBody)), squareBody},
		{discordNoTimestamp, discordSigned(discordKey, testNow, discordBody), discordBody},
		{sendgridNoTimestamp, sendgridSigned(sendgridKey, testNow, sendgridBody), sendgridBody},
		{paddleNoTimestamp, paddleSigned(testSecret, testNow, paddleBody), paddleBody},
		{linearNoTimestamp, linearSigned(testSecret, linear), linear},
	} {
		if _, err := tt.v.Verify(tt.h, tt.body); err != nil {
			t.Errorf("%s: %v", tt.v.Name(), err)
		}
	}
}
