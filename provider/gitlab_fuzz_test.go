package provider_test

import (
	"testing"
)

// FuzzGitLabToken checks that only the configured token is accepted, whatever is
// sent in its place.
func FuzzGitLabToken(f *testing.F) {
	f.Add(fuzzSecret)
	f.Add(fuzzSecret + " ")
	f.Add(fuzzSecret[:len(fuzzSecret)-1])
	f.Add("")

	v := newTestGitLab(f, fuzzSecret)
	f.Fuzz(func(t *testing.T, token string) {
		_, err := v.Verify(gitlabHeader(token), gitlabBody)
		if err != nil {
			checkSentinel(t, err)
		}
		if (err == nil) != (token == fuzzSecret) {
			t.Fatalf("token %q: Verify error %v", token, err)
		}
	})
}
