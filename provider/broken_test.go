package provider_test

// The common webhook verification bugs, kept as test-only verifiers so that the
// rejection tables are seen to catch them: a test that cannot fail proves nothing.
// Each broken verifier is run against a scheme's rejection table, and must accept the
// case that exists to catch its bug.

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// brokenGitHub is a GitHub verifier with optional bugs.
type brokenGitHub struct {
	secret string
	// prefixCompare compares only as many digits as the header carries, so a
	// signature truncated to a prefix verifies.
	prefixCompare bool
	// sha1Fallback reads X-Hub-Signature when X-Hub-Signature-256 is absent.
	sha1Fallback bool
}

func (b brokenGitHub) Name() string               { return "github" }
func (b brokenGitHub) RetryWindow() time.Duration { return 72 * time.Hour }

func (b brokenGitHub) Verify(h http.Header, body []byte) (provider.Verified, error) {
	sig, prefix, newHash := h.Get("X-Hub-Signature-256"), "sha256=", sha256.New
	if sig == "" && b.sha1Fallback {
		sig, prefix, newHash = h.Get("X-Hub-Signature"), "sha1=", sha1.New
	}
	if sig == "" {
		return provider.Verified{}, provider.ErrMissingSignature
	}
	digits, ok := strings.CutPrefix(sig, prefix)
	if !ok {
		return provider.Verified{}, provider.ErrMalformedSignature
	}
	want := hexMAC(newHash, b.secret, body)
	digits = strings.ToLower(digits)
	if b.prefixCompare {
		ok = digits != "" && strings.HasPrefix(want, digits)
	} else {
		ok = hmac.Equal([]byte(want), []byte(digits))
	}
	if !ok {
		return provider.Verified{}, provider.ErrNoValidSignature
	}
	return provider.Verified{ID: "x", Type: "x", Body: body}, nil
}

// brokenSlackOneWay is a Slack verifier that refuses stale timestamps but not future
// ones, so a delivery signed ahead of time can be held and replayed later.
type brokenSlackOneWay struct{ secret string }

func (b brokenSlackOneWay) Name() string               { return "slack" }
func (b brokenSlackOneWay) RetryWindow() time.Duration { return time.Hour }

func (b brokenSlackOneWay) Verify(h http.Header, body []byte) (provider.Verified, error) {
	ts, sig := h.Get("X-Slack-Request-Timestamp"), h.Get("X-Slack-Signature")
	if ts == "" || sig == "" {
		return provider.Verified{}, provider.ErrMissingSignature
	}
	unix, err := strconv.ParseUint(ts, 10, 63)
	if err != nil || !strings.HasPrefix(sig, "v0=") {
		return provider.Verified{}, provider.ErrMalformedSignature
	}
	if !hmac.Equal([]byte(slackSignature(b.secret, ts, body)), []byte("v0="+strings.ToLower(sig[3:]))) {
		return provider.Verified{}, provider.ErrNoValidSignature
	}
	if testNow.Sub(time.Unix(int64(unix), 0)) > provider.DefaultTolerance {
		return provider.Verified{}, provider.ErrTimestampOutOfTolerance
	}
	return provider.Verified{ID: "x", Type: "x", Body: body}, nil
}

// accepted returns the names of the cases v accepts.
func accepted(v provider.Verifier, cases []rejection) []string {
	var names []string
	for _, tt := range cases {
		if _, err := v.Verify(tt.header, tt.body); err == nil {
			names = append(names, tt.name)
		}
	}
	return names
}

func TestRejectionTablesCatchBrokenVerifiers(t *testing.T) {
	t.Parallel()

	testBrokenCaught(t, []brokenCase{
		{"prefix-truncated signature accepted", brokenGitHub{secret: testSecret, prefixCompare: true}, githubRejections(), "truncated signature"},
		{"SHA-1 fallback", brokenGitHub{secret: testSecret, sha1Fallback: true}, githubRejections(), "only the SHA-1 header, validly signed"},
		{"timestamp checked one way only", brokenSlackOneWay{secret: testSecret}, slackRejections(), "too far in the future"},
	})
}

// brokenCase is a broken verifier, the rejection table it is run against, and the
// case of the table that exists to catch its bug.
type brokenCase struct {
	bug      string
	verifier provider.Verifier
	cases    []rejection
	caughtBy string
}

// testBrokenCaught checks that each broken verifier accepts the case that exists to
// catch its bug, so that the table is seen to fail on it.
func testBrokenCaught(t *testing.T, tests []brokenCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.bug, func(t *testing.T) {
			t.Parallel()

			if got := accepted(tt.verifier, tt.cases); !slices.Contains(got, tt.caughtBy) {
				t.Errorf("broken verifier accepts %v; the table does not catch it with %q", got, tt.caughtBy)
			}
		})
	}
}

// TestBrokenVerifiersVerifyGoodRequests checks that the broken verifiers are broken
// only in their bug: each accepts a correctly signed request, so that what the
// rejection tables catch is the bug and not a verifier that refuses everything.
func TestBrokenVerifiersVerifyGoodRequests(t *testing.T) {
	t.Parallel()

	gh := githubHeader("sha256="+hexMAC(sha256.New, testSecret, githubBody), "issues")
	for _, v := range []provider.Verifier{brokenGitHub{secret: testSecret, prefixCompare: true}, brokenGitHub{secret: testSecret, sha1Fallback: true}} {
		if _, err := v.Verify(gh, githubBody); err != nil {
			t.Errorf("%+v: %v", v, err)
		}
	}
	if _, err := (brokenSlackOneWay{secret: testSecret}).Verify(slackSigned(testSecret, testNow, slackBody), slackBody); err != nil {
		t.Errorf("brokenSlackOneWay: %v", err)
	}
}
