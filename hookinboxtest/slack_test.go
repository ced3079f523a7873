package hookinboxtest_test

import (
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

func TestSlack_AcceptedBySlackGo(t *testing.T) {
	t.Parallel()

	body := []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}`)
	h, err := hookinboxtest.Slack("slack_secret").Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for secret, wantOK := range map[string]bool{"slack_secret": true, "other": false} {
		sv, err := slack.NewSecretsVerifier(h, secret)
		if err != nil {
			t.Fatalf("NewSecretsVerifier: %v", err)
		}
		if _, err := sv.Write(body); err != nil {
			t.Fatal(err)
		}
		if err := sv.Ensure(); (err == nil) != wantOK {
			t.Errorf("secret %s: slack-go Ensure = %v, want ok %t", secret, err, wantOK)
		}
	}
}
