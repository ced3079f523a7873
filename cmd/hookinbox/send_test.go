package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v74/github"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/stripe/stripe-go/v82/webhook"
	svix "github.com/svix/svix-webhooks/go"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/provider"
)

// sendSecrets are secrets of each scheme's form; Standard Webhooks' are whsec_ and
// base64.
var sendSecrets = map[string]string{
	"stripe":           "whsec_send_test",
	"standardwebhooks": "whsec_c2VuZC10ZXN0LXN0YW5kYXJkLXdlYmhvb2tz",
	"svix":             "whsec_c2VuZC10ZXN0LXN2aXgta2V5",
}

func sendSecret(provider string) string {
	if s, ok := sendSecrets[provider]; ok {
		return s
	}
	if k, ok := sendPrivateKeys[provider]; ok {
		return k
	}
	return "send_test_secret"
}

// sendPrivateKeys are the private keys send signs with for the schemes that the
// provider signs with its private key: discord's Ed25519 seed in hex, sendgrid's
// P-256 key in base64 DER (SEC 1). Test keys, made for these tests only.
var sendPrivateKeys = map[string]string{
	"discord":  "0707070707070707070707070707070707070707070707070707070707070707",
	"sendgrid": "MHcCAQEEIJdyl4Ia8l7LstB45Osojqip1y2fKgPSxcrYrB6ztUm/oAoGCCqGSM49AwEHoUQDQgAE0zm7wdenhcyd8U+41eVotG+IpCmGMcpq8eAWgN1ePw752K+KIFHuS8F6Mmeu0jgzpm71hwSwQkCyh1C3wtwYiw==",
}

// sendVerifierOptions are the options of the endpoint that send's events for
// provider go to: its secret, or the public key of send's private key.
func sendVerifierOptions(t *testing.T, name string, params map[string]string) provider.Options {
	t.Helper()
	if k, ok := sendPrivateKeys[name]; ok {
		return provider.Options{PublicKeys: []string{publicKeyOf(t, name, k)}, Params: params}
	}
	return provider.Options{Secrets: []string{sendSecret(name)}, Params: params}
}

// publicKeyOf returns the public key, in the form an endpoint's public_keys take,
// of one of sendPrivateKeys.
func publicKeyOf(t testing.TB, name, private string) string {
	t.Helper()
	switch name {
	case "discord":
		k, err := hookinboxtest.ParseDiscordKey(private)
		if err != nil {
			t.Fatal(err)
		}
		return hookinboxtest.DiscordPublicKey(k)
	default:
		k, err := hookinboxtest.ParseSendGridKey(private)
		if err != nil {
			t.Fatal(err)
		}
		public, err := hookinboxtest.SendGridPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return public
	}
}

// verifySent verifies what send sent with v, through the whole request for the
// schemes that sign the URL.
func verifySent(v provider.Verifier, req *http.Request, body []byte) (provider.Verified, error) {
	if rv, ok := v.(provider.RequestVerifier); ok {
		r := httptest.NewRequest(req.Method, req.URL.String(), nil)
		r.Header = req.Header
		return rv.VerifyRequest(r, body)
	}
	return v.Verify(req.Header, body)
}

// prepared runs send's command line up to the point of sending and returns the events
// and the signer it would send them with.
func prepared(t *testing.T, args ...string) ([]outgoing, hookinboxtest.Signer, error) {
	t.Helper()
	a := &app{stdout: io.Discard, stderr: io.Discard, lookupEnv: func(string) (string, bool) { return "", false }}
	var events []outgoing
	var signer hookinboxtest.Signer
	cmd := a.newSendCommand(func(_ *sendFlags, e []outgoing, s hookinboxtest.Signer) error {
		events, signer = e, s
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return events, signer, err
}

// signed returns the request send would post for ev, and its body.
func signed(t *testing.T, signer hookinboxtest.Signer, ev outgoing) (*http.Request, []byte) {
	t.Helper()
	req, err := newSignedRequest("http://127.0.0.1:1/webhooks", signer, ev)
	if err != nil {
		t.Fatalf("newSignedRequest(%s %s): %v", ev.id, ev.typ, err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return req, body
}

// sendCase is one send command line, whose events are checked against the verifier of
// the endpoint the command line is for.
type sendCase struct {
	name     string
	provider string
	options  map[string]string // --option, and the endpoint's options
	types    []string          // --type; nil for the template's default
	id       string            // --id
}

func (c sendCase) args() []string {
	args := []string{"--provider", c.provider, "--secret", sendSecret(c.provider)}
	for k, v := range c.options {
		args = append(args, "--option", k+"="+v)
	}
	for _, typ := range c.types {
		args = append(args, "--type", typ)
	}
	if c.id != "" {
		args = append(args, "--id", c.id)
	}
	return args
}

// sendCases cover every provider, each template's default type and the types with
// a payload of their own.
var sendCases = []sendCase{
	{name: "stripe default", provider: "stripe"},
	{name: "stripe types", provider: "stripe", types: []string{"invoice.created", "invoice.voided", "customer.created"}},
	{name: "stripe with id", provider: "stripe", types: []string{"invoice.paid"}, id: "evt_send_given"},
	{name: "github default", provider: "github"},
	{name: "github types", provider: "github", types: []string{"issues.opened", "issues.closed", "issue_comment.created", "pull_request.closed", "ping", "release.published", "star"}},
	{name: "github with id", provider: "github", types: []string{"issues.opened"}, id: "0b4e3f2a-cc78-11e3-81ab-4c9367dc0958"},
	{name: "shopify default", provider: "shopify"},
	{name: "shopify types", provider: "shopify", types: []string{"orders/paid", "orders/cancelled", "products/update", "app/uninstalled"}},
	{name: "slack default", provider: "slack"},
	{name: "slack types", provider: "slack", types: []string{"message", "reaction_added"}},
	{name: "slack with id", provider: "slack", types: []string{"app_mention"}, id: "Ev0SENDTEST"},
	{name: "standardwebhooks default", provider: "standardwebhooks"},
	{name: "standardwebhooks types", provider: "standardwebhooks", types: []string{"user.created", "invoice.paid"}, options: map[string]string{"retry_window": "24h"}},
	{name: "svix default", provider: "svix"},
	{name: "svix with id", provider: "svix", types: []string{"contact.created"}, id: "msg_send_given"},
	{name: "hmac default", provider: "hmac", options: map[string]string{"header": "X-Signature"}},
	{name: "hmac fields", provider: "hmac", types: []string{"thing.done"}, options: map[string]string{
		"header": "X-Signature", "id_field": "data.object.id", "type_field": "meta.kind",
	}},
	{name: "hmac fields sharing an object", provider: "hmac", types: []string{"a.b", "c"}, options: map[string]string{
		"header": "X-Signature", "prefix": "sha256=", "id_field": "event.id", "type_field": "event.type",
		"timestamp_header": "X-Timestamp",
	}},
	{name: "hmac headers", provider: "hmac", types: []string{"thing.done"}, id: "delivery-7", options: map[string]string{
		"header": "X-Signature", "algorithm": "sha512", "encoding": "base64", "id_header": "X-Event-Id",
		"type_header": "X-Event-Type", "timestamp_header": "X-Timestamp", "signed_payload": "{id}.{timestamp}.{body}",
	}},
	{name: "discord default", provider: "discord"},
	{name: "discord types", provider: "discord", types: []string{"message_component", "modal_submit"}},
	{name: "sendgrid default", provider: "sendgrid"},
	{name: "sendgrid types", provider: "sendgrid", types: []string{"open", "bounce"}, id: ""},
	{name: "twilio default", provider: "twilio"},
	{name: "twilio types", provider: "twilio", types: []string{"call.completed", "recording.completed"}},
	{name: "twilio behind a proxy", provider: "twilio", options: map[string]string{"public_url": "http://127.0.0.1:1/webhooks"}},
	{name: "square default", provider: "square"},
	{name: "square with id", provider: "square", types: []string{"refund.created"}, id: "0b4e3f2a-cc78-11e3-81ab-4c9367dc0958"},
	{name: "paddle default", provider: "paddle"},
	{name: "paddle types", provider: "paddle", types: []string{"subscription.created", "customer.updated"}},
	{name: "linear default", provider: "linear"},
	{name: "linear types", provider: "linear", types: []string{"Comment.create", "Issue.remove"}},
	{name: "zoom default", provider: "zoom"},
	{name: "zoom types", provider: "zoom", types: []string{"meeting.ended", "recording.completed"}},
	{name: "gitlab default", provider: "gitlab"},
	{name: "gitlab types", provider: "gitlab", types: []string{"Merge Request Hook", "Pipeline Hook"}},
	{name: "gitlab with id", provider: "gitlab", types: []string{"Push Hook"}, id: "d1b7a7c5-0f38-4f3c-9b55-0b8b6f2c6a11"},
}

// defaultIDForm is the form of the ids each template makes.
var defaultIDForm = map[string]*regexp.Regexp{
	"stripe":           regexp.MustCompile(`^evt_[0-9A-Za-z]{24}$`),
	"github":           regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
	"shopify":          regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
	"slack":            regexp.MustCompile(`^Ev[0-9A-Z]{10}$`),
	"standardwebhooks": regexp.MustCompile(`^msg_[0-9A-Za-z]{27}$`),
	"svix":             regexp.MustCompile(`^msg_[0-9A-Za-z]{27}$`),
	"hmac":             regexp.MustCompile(`^evt_[0-9A-Za-z]{24}$`),
	"discord":          regexp.MustCompile(`^[0-9]{19}$`),
	"sendgrid":         regexp.MustCompile(`^[0-9A-Za-z]{22}$`),
	"twilio":           regexp.MustCompile(`^(SM|CA|RE)[0-9a-f]{32}:[0-9a-f]{32}$`),
	"square":           regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
	"paddle":           regexp.MustCompile(`^evt_[0-9a-z]{26}$`),
	"linear":           regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
	"zoom":             regexp.MustCompile(`^[a-z.]+:[0-9]{13}:[0-9a-f]{32}$`),
	"gitlab":           regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
}

// TestSendTemplates_VerifiedByEveryProvider builds the events send would send for
// every provider a config accepts, signs them as send does (hookinboxtest.SignerFor),
// and runs the endpoint's verifier (provider.New, with the same options) over them:
// each verifies, and the verifier reads back the id and type send printed, which
// are those asked for.
func TestSendTemplates_VerifiedByEveryProvider(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, c := range sendCases {
		covered[c.provider] = true
	}
	for _, name := range provider.Names() {
		if !covered[name] {
			t.Errorf("provider %s, which a config accepts, has no send case", name)
		}
	}

	for _, c := range sendCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			events, signer, err := prepared(t, c.args()...)
			if err != nil {
				t.Fatalf("send %v: %v", c.args(), err)
			}
			wantTypes := c.types
			if wantTypes == nil {
				wantTypes = []string{templates[c.provider].defaultType}
			}
			if len(events) != len(wantTypes) {
				t.Fatalf("%d events for types %v", len(events), wantTypes)
			}
			v, err := provider.New(c.provider, sendVerifierOptions(t, c.provider, c.options))
			if err != nil {
				t.Fatalf("provider.New: %v", err)
			}
			for i, ev := range events {
				if ev.typ != wantTypes[i] {
					t.Errorf("event %d has type %q, want %q", i, ev.typ, wantTypes[i])
				}
				if c.id != "" && ev.id != c.id {
					t.Errorf("event %d has id %q, want --id %q", i, ev.id, c.id)
				}
				if c.id == "" && !defaultIDForm[c.provider].MatchString(ev.id) {
					t.Errorf("event %d has id %q, not of the form %s", i, ev.id, defaultIDForm[c.provider])
				}
				req, body := signed(t, signer, ev)
				got, err := verifySent(v, req, body)
				if err != nil {
					t.Errorf("%s %s: Verify: %v\nheaders %v\nbody %s", ev.id, ev.typ, err, req.Header, body)
					continue
				}
				if got.ID != ev.id || got.Type != ev.typ {
					t.Errorf("Verify read id %q, type %q; send sent %q, %q", got.ID, got.Type, ev.id, ev.typ)
				}
				// What is stored: Twilio's form as the JSON of its parameters.
				var fields map[string]any
				if err := json.Unmarshal(got.Body, &fields); err != nil && c.provider != "sendgrid" {
					t.Fatalf("body is not a JSON object: %v", err)
				}
				if _, stripeShaped := fields["pending_webhooks"]; stripeShaped != (c.provider == "stripe") {
					t.Errorf("body of %s is Stripe-shaped: %t, want %t: %s", c.provider, stripeShaped, c.provider == "stripe", body)
				}
			}
		})
	}
}

// TestSendTemplates_ParsedByProviderLibraries hands what send sends to the providers'
// own libraries, which check the signature and decode the payload into their event
// types.
func TestSendTemplates_ParsedByProviderLibraries(t *testing.T) {
	t.Parallel()
	first := func(t *testing.T, args ...string) (outgoing, *http.Request, []byte) {
		t.Helper()
		events, signer, err := prepared(t, args...)
		if err != nil || len(events) != 1 {
			t.Fatalf("send %v: %d events, %v", args, len(events), err)
		}
		req, body := signed(t, signer, events[0])
		return events[0], req, body
	}

	t.Run("stripe", func(t *testing.T) {
		t.Parallel()
		secret := sendSecret("stripe")
		ev, req, body := first(t, "--secret", secret, "--invoice", "in_send_1", "--customer", "cus_send", "--amount", "2500", "--currency", "eur")
		event, err := webhook.ConstructEventWithOptions(body, req.Header.Get("Stripe-Signature"), secret,
			webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
		if err != nil {
			t.Fatalf("stripe-go: %v", err)
		}
		o := event.Data.Object
		if event.ID != ev.id || string(event.Type) != "invoice.paid" || event.Object != "event" || event.Created == 0 ||
			o["object"] != "invoice" || o["id"] != "in_send_1" || o["customer"] != "cus_send" || o["status"] != "paid" ||
			o["amount_paid"] != 2500.0 || o["currency"] != "eur" {
			t.Errorf("stripe-go event = %+v, object %v", event, o)
		}
	})

	t.Run("github", func(t *testing.T) {
		t.Parallel()
		secret := sendSecret("github")
		for _, typ := range []string{"push", "issues.opened", "issue_comment.created", "pull_request.closed", "ping"} {
			ev, req, body := first(t, "--provider", "github", "--secret", secret, "--type", typ)
			if err := github.ValidateSignature(req.Header.Get(github.SHA256SignatureHeader), body, []byte(secret)); err != nil {
				t.Errorf("%s: go-github ValidateSignature: %v", typ, err)
			}
			if github.DeliveryID(req) != ev.id {
				t.Errorf("%s: delivery id %q, want %q", typ, github.DeliveryID(req), ev.id)
			}
			event, action, _ := strings.Cut(typ, ".")
			if got := github.WebHookType(req); got != event {
				t.Errorf("%s: X-GitHub-Event %q, want %q", typ, got, event)
			}
			parsed, err := github.ParseWebHook(github.WebHookType(req), body)
			if err != nil {
				t.Fatalf("%s: go-github ParseWebHook: %v", typ, err)
			}
			var ok bool
			switch e := parsed.(type) {
			case *github.PushEvent:
				ok = e.GetRef() == "refs/heads/main" && len(e.GetAfter()) == 40 && len(e.Commits) == 1 &&
					e.GetHeadCommit().GetID() == e.GetAfter() && e.GetRepo().GetFullName() == "hookinbox/hookinbox-test" &&
					e.GetSender().GetLogin() != ""
			case *github.IssuesEvent:
				ok = e.GetAction() == action && e.GetIssue().GetNumber() == 1 && e.GetIssue().GetState() == "open" &&
					e.GetRepo().GetFullName() == "hookinbox/hookinbox-test"
			case *github.IssueCommentEvent:
				ok = e.GetAction() == action && e.GetComment().GetBody() != "" && e.GetIssue().GetNumber() == 1
			case *github.PullRequestEvent:
				ok = e.GetAction() == action && e.GetNumber() == 2 && e.GetPullRequest().GetState() == "closed" &&
					e.GetPullRequest().GetHead().GetSHA() != ""
			case *github.PingEvent:
				ok = e.GetZen() != "" && e.GetHookID() != 0 && e.GetHook().GetActive()
			}
			if !ok {
				t.Errorf("%s: go-github parsed %T %+v from %s", typ, parsed, parsed, body)
			}
		}
	})

	t.Run("slack", func(t *testing.T) {
		t.Parallel()
		secret := sendSecret("slack")
		for _, typ := range []string{"app_mention", "message"} {
			ev, req, body := first(t, "--provider", "slack", "--secret", secret, "--type", typ)
			sv, err := slack.NewSecretsVerifier(req.Header, secret)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sv.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := sv.Ensure(); err != nil {
				t.Errorf("%s: slack-go SecretsVerifier: %v", typ, err)
			}
			parsed, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
			if err != nil {
				t.Fatalf("%s: slack-go ParseEvent: %v", typ, err)
			}
			cb, _ := parsed.Data.(*slackevents.EventsAPICallbackEvent)
			if parsed.Type != slackevents.CallbackEvent || parsed.InnerEvent.Type != typ || parsed.TeamID == "" ||
				cb == nil || cb.EventID != ev.id || cb.EventTime == 0 || cb.APIAppID == "" {
				t.Errorf("%s: slack-go parsed %+v", typ, parsed)
			}
			switch inner := parsed.InnerEvent.Data.(type) {
			case *slackevents.AppMentionEvent:
				if typ != "app_mention" || inner.User == "" || inner.Channel == "" || inner.Text == "" {
					t.Errorf("app mention %+v", inner)
				}
			case *slackevents.MessageEvent:
				if typ != "message" || inner.User == "" || inner.Channel == "" || inner.Text == "" {
					t.Errorf("message %+v", inner)
				}
			default:
				t.Errorf("%s: inner event %T", typ, inner)
			}
		}
	})

	for _, name := range []string{"standardwebhooks", "svix"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			secret := sendSecret(name)
			ev, req, body := first(t, "--provider", name, "--secret", secret, "--type", "contact.created")
			wh, err := svix.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, req.Header); err != nil {
				t.Errorf("svix library Verify: %v", err)
			}
			prefix := map[string]string{"standardwebhooks": "Webhook", "svix": "Svix"}[name]
			if req.Header.Get(prefix+"-Id") != ev.id {
				t.Errorf("headers %v, want %s-Id %s", req.Header, prefix, ev.id)
			}
			var payload struct {
				Type      string `json:"type"`
				Timestamp string `json:"timestamp"`
				Data      struct {
					ID   string `json:"id"`
					Type string `json:"type"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &payload); err != nil || payload.Type != "contact.created" || payload.Timestamp == "" ||
				payload.Data.ID == "" || payload.Data.Type != "contact" {
				t.Errorf("payload %s: %+v, %v", body, payload, err)
			}
		})
	}

	t.Run("shopify", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct{ topic, financial string }{{"orders/create", "pending"}, {"orders/paid", "paid"}} {
			_, _, body := first(t, "--provider", "shopify", "--secret", "s", "--type", tt.topic, "--amount", "2599", "--currency", "eur")
			var order struct {
				ID              int64  `json:"id"`
				GraphQLID       string `json:"admin_graphql_api_id"`
				TotalPrice      string `json:"total_price"`
				Currency        string `json:"currency"`
				FinancialStatus string `json:"financial_status"`
				LineItems       []any  `json:"line_items"`
			}
			if err := json.Unmarshal(body, &order); err != nil || order.ID <= 0 || !strings.HasPrefix(order.GraphQLID, "gid://shopify/Order/") ||
				order.TotalPrice != "25.99" || order.Currency != "EUR" || order.FinancialStatus != tt.financial || len(order.LineItems) != 1 {
				t.Errorf("%s: order %s: %+v, %v", tt.topic, body, order, err)
			}
		}
	})
}

// Through serve: a config with an endpoint of every provider, svix included, loads,
// and send's template events are accepted by each, once, and then answered as
// duplicates. The svix endpoint's receipts are stored under standardwebhooks, its
// verifier's name.
func TestSend_TemplatesThroughServe(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	dbURL := schemaURL(t, db, "")
	types := map[string][]string{
		"stripe": {"invoice.created", "customer.created"}, "github": {"push", "issues.opened"},
		"shopify": {"orders/create", "products/update"}, "slack": {"app_mention", "message"},
		"standardwebhooks": {"user.created"}, "svix": {"invoice.paid", "contact.created"}, "hmac": {"thing.done"},
		"discord": {"application_command"}, "sendgrid": {"delivered", "open"}, "twilio": {"message.delivered", "call.completed"},
		"square": {"payment.updated"}, "paddle": {"transaction.completed"}, "linear": {"Issue.create", "Comment.update"},
		"zoom": {"meeting.started"}, "gitlab": {"Push Hook", "Merge Request Hook"},
	}
	hmacOptions := map[string]string{"header": "X-Signature", "id_field": "data.id", "type_field": "kind"}
	var config strings.Builder
	fmt.Fprintf(&config, "database_url: %s\nlisten: 127.0.0.1:0\nendpoints:\n", dbURL)
	var vars []string
	for _, name := range provider.Names() {
		v := "E2E_SEND_" + strings.ToUpper(name)
		vars = append(vars, v+"="+sendSecret(name))
		keys := "secrets_env: [" + v + "]"
		if k, ok := sendPrivateKeys[name]; ok {
			keys = "public_keys: [\"" + publicKeyOf(t, name, k) + "\"]"
		}
		fmt.Fprintf(&config, "  - {name: %s, path: /%s, provider: %s, %s, handler: none", name, name, name, keys)
		if name == "hmac" {
			config.WriteString(", options: {header: X-Signature, id_field: data.id, type_field: kind}")
		}
		config.WriteString("}\n")
	}
	file := filepath.Join(t.TempDir(), "hookinbox.yaml")
	if err := os.WriteFile(file, []byte(config.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := childEnv(vars...)
	mustRun(t, env, "migrate", "--database-url", dbURL)
	p := startServe(t, env, "--config", file)

	for _, name := range provider.Names() {
		args := []string{"send", "--url", p.url("/" + name), "--provider", name, "--secret-env", "E2E_SEND_" + strings.ToUpper(name),
			"--type", strings.Join(types[name], ","), "--repeat", "2"}
		if name == "hmac" {
			for k, v := range hmacOptions {
				args = append(args, "--option", k+"="+v)
			}
		}
		r := runBinary(t, env, args...)
		got := outcomes(strings.Split(strings.TrimSpace(r.stdout), "\n"))
		if n := len(types[name]); r.code != 0 || got["200 ignored"] != n || got["200 duplicate"] != n {
			t.Errorf("send to %s: exit %d, %v, want %d ignored and %d duplicates; stderr %q", name, r.code, got, n, n, r.stderr)
		}
	}

	var list []receiptJSON
	if err := json.Unmarshal([]byte(mustRun(t, env, "events", "list", "--endpoint", "svix", "--json", "--config", file)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("svix endpoint's receipts = %+v, want 2", list)
	}
	for _, r := range list {
		if r.Provider != "standardwebhooks" || r.Endpoint != "svix" || !strings.HasPrefix(r.EventID, "msg_") {
			t.Errorf("svix endpoint's receipt = %+v, want provider standardwebhooks", r)
		}
	}
}

// The hmac template puts the id and type where the endpoint reads them; paths where
// both cannot fit are refused, as are template flags the provider's template does
// not use.
func TestSend_RefusesWhatTheTemplateCannotUse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "github", "--invoice", "in_1"}, "--invoice shapes the templates of stripe, not github's"},
		{[]string{"--provider", "slack", "--amount", "5"}, "--amount shapes the templates of shopify and stripe, not slack's"},
		{[]string{"--provider", "hmac", "--option", "header=X-Sig", "--option", "id_field=a", "--option", "type_field=a.b"}, "--option type_field=a.b: the other event field is a"},
		{[]string{"--provider", "hmac", "--option", "header=X-Sig", "--option", "id_field=a.b", "--option", "type_field=a"}, "--option type_field=a: the other event field is at or inside a"},
		{[]string{"--provider", "hmac", "--option", "header=X-Sig", "--option", "type_field=type"}, ""},
		{[]string{"--type", ""}, "--type: at least one event type"},
		{[]string{"--type", "invoice.paid,"}, "--type: empty event type"},
		{[]string{"--provider", "github", "--type", ".opened"}, "a GitHub event name before the action"},
		{[]string{"--provider", "github", "--file", "testdata/invoice_paid.json", "--type", ""}, "--type with --file: one type"},
		{[]string{"--provider", "github", "--file", "testdata/invoice_paid.json", "--id", "d-1"}, ""},
	} {
		_, _, err := prepared(t, append([]string{"--secret", "s"}, tt.args...)...)
		var ue *usageError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("send %v: %v", tt.args, err)
		case tt.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("send %v: error %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}

// The help names every provider send signs for, which are those a config accepts.
func TestSend_HelpNamesEveryProvider(t *testing.T) {
	t.Parallel()
	r := runInProcess(t, nil, "send", "--help")
	if r.code != 0 {
		t.Fatalf("send --help: exit %d, %s", r.code, r.stderr)
	}
	names := hookinboxtest.Names()
	if !slices.Equal(names, provider.Names()) {
		t.Fatalf("send signs for %v, a config accepts %v", names, provider.Names())
	}
	for _, name := range names {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("send --help does not mention %s", name)
		}
		if _, ok := templates[name]; !ok {
			t.Errorf("no event template for %s", name)
		}
	}
}

// printedKey runs send --print-public-key for name with the private key private (""
// for none) and returns what it printed, as the shell variables it assigns.
func printedKey(t *testing.T, name, private string) map[string]string {
	t.Helper()
	args := []string{"send", "--provider", name, "--print-public-key"}
	env := map[string]string{}
	if private != "" {
		env["SEND_PRIVATE_KEY"] = private
		args = append(args, "--secret-env", "SEND_PRIVATE_KEY")
	}
	r := runInProcess(t, env, args...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d, %s", args, r.code, r.stderr)
	}
	vars := map[string]string{}
	for line := range strings.Lines(r.stdout) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			t.Fatalf("%v: line %q is not an assignment", args, line)
		}
		vars[k] = v
	}
	return vars
}

// TestSend_PrintPublicKey checks that the public key --print-public-key prints, and
// the pair it makes without a private key, configure a verifier (package provider)
// that accepts what send signs with the private key, and refuses another key's.
func TestSend_PrintPublicKey(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"discord", "sendgrid"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			given := printedKey(t, name, sendPrivateKeys[name])
			if len(given) != 1 || given["public_key"] == "" {
				t.Fatalf("with a private key: printed %v, want public_key alone", given)
			}
			pair := printedKey(t, name, "")
			if len(pair) != 2 || pair["private_key"] == "" || pair["public_key"] == "" {
				t.Fatalf("without a private key: printed %v, want private_key and public_key", pair)
			}
			if again := printedKey(t, name, pair["private_key"]); again["public_key"] != pair["public_key"] {
				t.Errorf("the new pair's private key prints public key %s, not the pair's %s", again["public_key"], pair["public_key"])
			}

			for _, tt := range []struct {
				what, private, public string
			}{
				{"the given key", sendPrivateKeys[name], given["public_key"]},
				{"the new pair", pair["private_key"], pair["public_key"]},
			} {
				v, err := provider.New(name, provider.Options{PublicKeys: []string{tt.public}})
				if err != nil {
					t.Fatalf("%s: the printed public key configures no verifier: %v", tt.what, err)
				}
				events, signer, err := prepared(t, "--provider", name, "--secret", tt.private)
				if err != nil {
					t.Fatal(err)
				}
				req, body := signed(t, signer, events[0])
				if _, err := verifySent(v, req, body); err != nil {
					t.Errorf("%s: what send signs does not verify with the printed public key: %v", tt.what, err)
				}
			}
			v, err := provider.New(name, provider.Options{PublicKeys: []string{pair["public_key"]}})
			if err != nil {
				t.Fatal(err)
			}
			events, signer, err := prepared(t, "--provider", name, "--secret", sendPrivateKeys[name])
			if err != nil {
				t.Fatal(err)
			}
			req, body := signed(t, signer, events[0])
			if _, err := verifySent(v, req, body); !errors.Is(err, provider.ErrNoValidSignature) {
				t.Errorf("another key's signature under the new pair's public key: %v, want %v", err, provider.ErrNoValidSignature)
			}
		})
	}
}

// --print-public-key is refused, with exit 2, for a scheme of shared secrets and for
// a private key that does not parse, whose text the error does not quote.
func TestSend_PrintPublicKeyRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "stripe"}, "stripe signs with a shared secret"},
		{[]string{"--provider", "discord", "--secret", "not-hex-PRIVATE"}, "not hex"},
		{[]string{"--provider", "sendgrid", "--secret", "bm90IGEga2V5LVBSSVZBVEU="}, "not a DER ECDSA P-256 key"},
		{[]string{"--provider", "discord", "--secret", "a", "--secret-env", "B"}, "not both"},
	} {
		r := runInProcess(t, nil, append([]string{"send", "--print-public-key"}, tt.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || r.stdout != "" || strings.Contains(r.stderr, "PRIVATE") {
			t.Errorf("send --print-public-key %v: exit %d, stdout %q, stderr %q; want 2 and an error saying %q without the key",
				tt.args, r.code, r.stdout, r.stderr, tt.want)
		}
	}
}
