package hookinboxtest_test

import (
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

func TestGitLab_SendsTheToken(t *testing.T) {
	t.Parallel()

	h, err := hookinboxtest.GitLab("glpat-token").Sign([]byte(`{"id":"u-1","type":"Push Hook","object_kind":"push"}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-Gitlab-Token") != "glpat-token" || h.Get("X-Gitlab-Event-UUID") != "u-1" || h.Get("Idempotency-Key") != "u-1" || h.Get("X-Gitlab-Event") != "Push Hook" {
		t.Errorf("headers %v", h)
	}
}
