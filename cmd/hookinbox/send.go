package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/sign"
)

// sendFlags are send's options.
type sendFlags struct {
	url         string
	provider    string
	options     map[string]string
	secret      string
	secretEnv   string
	types       []string
	id          string
	invoice     string
	customer    string
	amount      int64
	currency    string
	file        string
	repeat      int
	concurrency int
	shuffle     bool
	timeout     time.Duration
	// printPublicKey prints the public key of the private key instead of sending.
	printPublicKey bool
}

// templateFlags shape a template and make no sense with --file; each provider's
// template uses some of them (eventTemplate.flags).
var templateFlags = []string{"invoice", "customer", "amount", "currency"}

// outgoing is one event to send, with the id and type it is printed under and that
// schemes carrying them in headers (github, shopify, standardwebhooks, hmac) send.
type outgoing struct {
	id, typ string
	// signType, when set, is the type to send in the scheme's header instead of typ:
	// a github template's event, "issues" for type "issues.opened".
	signType string
	body     []byte
}

func (a *app) sendCommand() *cobra.Command { return a.newSendCommand(a.send) }

// newSendCommand is send, with deliver in place of a.send: tests take the events and
// the signer from there.
func (a *app) newSendCommand(deliver func(*sendFlags, []outgoing, sign.Signer) error) *cobra.Command {
	var f sendFlags
	cmd := &cobra.Command{
		Use:   "send",
		Short: "Sign and send test events to an endpoint",
		Long: `Sign test events the way the provider does and POST them, like the Stripe CLI's
trigger, then print each answer as: EVENT_ID TYPE -> STATUS BODY. Exits 1 if any
answer was not 2xx (or did not come).

--provider selects the signature scheme: stripe (default), github, shopify, slack,
standardwebhooks, svix, hmac, discord, sendgrid, twilio, square, paddle, linear, zoom
or gitlab, with the endpoint's options as --option key=value (e.g. --option
header=X-Signature --option algorithm=sha256 for hmac; --option public_url=URL for
twilio and square, to sign for the URL the provider calls rather than --url). For
discord and sendgrid, which providers sign with their private key, the secret is a
private key: discord's Ed25519 seed in hex, sendgrid's P-256 key as base64 DER; the
endpoint is configured with the matching public key, which --print-public-key
prints (public_key=...) and sends nothing. Without a private key, --print-public-key
makes a new key pair and prints both (private_key=... and public_key=...): give the
private key to send (--secret-env) and the public key to the endpoint (public_keys).

Events come from a built-in template shaped like the provider's events (--type, one
event per type) or, with --file, from a JSON file sent byte for byte ("-" reads
stdin). Each template event gets a new id in the provider's form unless --id is
given, and the verifier reads back that id and the type. The templates:
  stripe: an Event object (default type invoice.paid). These types carry an invoice
    in the state the type implies, one invoice for the events of one run (--invoice,
    default a new in_... id; --customer, --amount, --currency):
    ` + invoiceTypes + `
    Any other type carries a minimal object (e.g. to see an "ignored" answer).
  github: the payload of the event named before the type's first dot, with the rest
    as its action: push (the default), issues.opened, issue_comment.created,
    pull_request.closed, ping; others carry the repository and sender only. The id
    and event go in X-GitHub-Delivery and X-GitHub-Event.
  shopify: an order for orders/* topics (default orders/create; --amount, --currency),
    another topic's resource with an id; the id and topic go in headers.
  slack: an Events API event_callback envelope, the type as the inner event's
    (default app_mention).
  standardwebhooks, svix: {"type", "timestamp", "data"} (default invoice.paid), the
    id in webhook-id or svix-id.
  hmac: the id and type (default invoice.paid) at the endpoint's id_field and
    type_field ("id" and "type"), or in its id_header and type_header.
  discord: an interaction of the type named (default application_command; ping,
    message_component, application_command_autocomplete, modal_submit).
  sendgrid: an array of one event (default delivered), the id in sg_event_id.
  twilio: a status callback form, the type a resource and status (default
    message.delivered; call.completed, recording.completed); --id sets the Sid, and
    the id printed is the one the receiver derives.
  square: an event notification (default payment.updated), the id in event_id.
  paddle: a notification (default transaction.completed), the id in event_id.
  linear: an entity and action (default Issue.create) with webhookTimestamp; the id
    goes in Linear-Delivery.
  zoom: an event (default meeting.started); the id printed is the one the receiver
    derives from the body.
  gitlab: the payload of the hook named (default "Push Hook"); the id goes in
    Idempotency-Key and X-Gitlab-Event-UUID.

With --file, schemes that send the event's id and type in headers take them from
the body's "id" and "type", or from --id and --type.

--repeat N sends every event N times (same id and body: duplicates), --concurrency C
sends with C requests in flight, all starting together, and --shuffle sends in random
order (with several --type values: out-of-order delivery).`,
		Example: `  # an invoice payment, then the same event again: processed, then duplicate
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --id evt_demo_1 --type invoice.paid
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --id evt_demo_1 --type invoice.paid

  # ten copies at once: one processed, nine duplicates
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --repeat 10 --concurrency 10

  # one invoice's lifecycle, out of order
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --shuffle \
      --type invoice.created,invoice.finalized,invoice.paid,invoice.payment_succeeded

  # a GitHub issue opened, then a push
  hookinbox send --provider github --secret-env GITHUB_WEBHOOK_SECRET \
      --url http://127.0.0.1:8080/webhooks/github --type issues.opened,push

  # a new Discord key pair in the shell's variables, then the endpoint's public key
  eval "$(hookinbox send --provider discord --print-public-key)"
  export DISCORD_PRIVATE_KEY=$private_key DISCORD_PUBLIC_KEY=$public_key
  hookinbox send --provider discord --secret-env DISCORD_PRIVATE_KEY --print-public-key`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.printPublicKey {
				return a.printPublicKey(&f)
			}
			events, signer, err := a.prepareSend(cmd, &f)
			if err != nil {
				return err
			}
			return deliver(&f, events, signer)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "http://127.0.0.1:8080/webhooks/stripe", "endpoint URL")
	fl.StringVar(&f.provider, "provider", "stripe", "signature scheme: stripe, github, shopify, slack, standardwebhooks, svix, hmac, discord, sendgrid, twilio, square, paddle, linear, zoom or gitlab")
	fl.StringToStringVar(&f.options, "option", nil, "scheme option key=value, as in the endpoint's options (repeatable)")
	fl.StringVar(&f.secret, "secret", "", "signing secret, or private key for discord and sendgrid (prefer --secret-env: arguments are visible to other users)")
	fl.StringVar(&f.secretEnv, "secret-env", "", "environment variable holding the signing secret (discord, sendgrid: the private key)")
	fl.StringSliceVar(&f.types, "type", nil, "event type; repeat or separate with commas for several events (default: the provider's, e.g. invoice.paid for stripe, push for github; with --file: the type header of schemes that send one)")
	fl.StringVar(&f.id, "id", "", "event id (default a new id in the provider's form per event; only with one --type; with --file: the id header of schemes that send one)")
	fl.StringVar(&f.invoice, "invoice", "", "invoice id of stripe's invoice.* templates (default a new in_...)")
	fl.StringVar(&f.customer, "customer", "cus_hookinbox_test", "customer id of stripe's invoice.* templates")
	fl.Int64Var(&f.amount, "amount", 1000, "amount of stripe's invoices and shopify's orders, in the currency's smallest unit")
	fl.StringVar(&f.currency, "currency", "usd", "currency of stripe's invoices and shopify's orders")
	fl.StringVar(&f.file, "file", "", `send this JSON file as the body ("-" for stdin) instead of a template`)
	fl.IntVar(&f.repeat, "repeat", 1, "send every event this many times")
	fl.IntVar(&f.concurrency, "concurrency", 1, "requests in flight at once")
	fl.BoolVar(&f.shuffle, "shuffle", false, "send in random order")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of each request")
	fl.BoolVar(&f.printPublicKey, "print-public-key", false, "discord, sendgrid: print the public key of the private key (the endpoint's public_keys), or without one a new key pair, and send nothing")
	return cmd
}

// prepareSend checks the flags and builds the events and the signer.
func (a *app) prepareSend(cmd *cobra.Command, f *sendFlags) ([]outgoing, sign.Signer, error) {
	switch {
	case f.repeat < 1:
		return nil, nil, usagef("--repeat must be at least 1")
	case f.concurrency < 1:
		return nil, nil, usagef("--concurrency must be at least 1")
	case f.timeout <= 0:
		return nil, nil, usagef("--timeout must be positive")
	}
	secret, err := a.signingSecret(f)
	if err != nil {
		return nil, nil, err
	}
	if secret == "" {
		return nil, nil, usagef("no signing secret: pass --secret-env VAR (or --secret)")
	}
	signer, err := sign.For(f.provider, []string{secret}, f.options)
	if err != nil {
		return nil, nil, usagef("--provider %s: %v", f.provider, err)
	}

	if f.file != "" {
		for _, name := range templateFlags {
			if cmd.Flags().Changed(name) {
				return nil, nil, usagef("--%s shapes a template and cannot be used with --file", name)
			}
		}
		ev, err := a.readEventFile(f.file)
		if err != nil {
			return nil, nil, err
		}
		if cmd.Flags().Changed("id") || cmd.Flags().Changed("type") {
			if _, ok := signer.(sign.EventSigner); !ok {
				return nil, nil, usagef("--id and --type with --file: %s takes them from the body", f.provider)
			}
			if cmd.Flags().Changed("type") && len(f.types) != 1 {
				return nil, nil, usagef("--type with --file: one type")
			}
			if cmd.Flags().Changed("id") {
				ev.id = f.id
			}
			if cmd.Flags().Changed("type") {
				ev.typ = f.types[0]
			}
		}
		return []outgoing{ev}, signer, nil
	}

	events, err := templateEvents(cmd, f)
	if err != nil {
		return nil, nil, err
	}
	return events, signer, nil
}

// signingSecret returns the secret (or private key) of --secret or --secret-env, ""
// when neither is given.
func (a *app) signingSecret(f *sendFlags) (string, error) {
	switch {
	case f.secret != "" && f.secretEnv != "":
		return "", usagef("give --secret or --secret-env, not both")
	case f.secretEnv != "":
		secret, _ := a.lookupEnv(f.secretEnv)
		if secret == "" {
			return "", usagef("--secret-env: environment variable %s is empty or unset", f.secretEnv)
		}
		return secret, nil
	}
	return f.secret, nil
}

// printPublicKey prints public_key=<the public key of the private key send signs
// with>, in the form an endpoint's public_keys take; without a private key it makes
// a new pair and prints private_key=<it> first. The lines are shell assignments, so
// that eval "$(hookinbox send ... --print-public-key)" sets both.
func (a *app) printPublicKey(f *sendFlags) error {
	if !slices.Contains(sign.KeyPairProviders, f.provider) {
		return usagef("--print-public-key: --provider %s signs with a shared secret, which has no public key (%s sign with a key pair)",
			f.provider, strings.Join(sign.KeyPairProviders, " and "))
	}
	private, err := a.signingSecret(f)
	if err != nil {
		return err
	}
	if private == "" {
		private, public, err := sign.GenerateKey(f.provider)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "a new %s key pair: give the private key to send (--secret-env) and the public key to the endpoint (public_keys); it is stored nowhere else\n", f.provider)
		fmt.Fprintf(a.stdout, "private_key=%s\npublic_key=%s\n", private, public)
		return nil
	}
	public, err := sign.PublicKey(f.provider, private)
	if err != nil {
		return usagef("--print-public-key: %v", err)
	}
	fmt.Fprintf(a.stdout, "public_key=%s\n", public)
	return nil
}

// templateEvents builds the events of f.provider's template, one per type.
func templateEvents(cmd *cobra.Command, f *sendFlags) ([]outgoing, error) {
	tmpl, ok := templates[f.provider]
	if !ok {
		return nil, fmt.Errorf("--provider %s: no event template", f.provider)
	}
	for _, name := range templateFlags {
		if cmd.Flags().Changed(name) && !slices.Contains(tmpl.flags, name) {
			return nil, usagef("--%s shapes the templates of %s, not %s's", name, strings.Join(flagUsers(name), " and "), f.provider)
		}
	}
	types := f.types
	if !cmd.Flags().Changed("type") {
		types = []string{tmpl.defaultType}
	}
	if len(types) == 0 {
		return nil, usagef("--type: at least one event type")
	}
	if f.id != "" && len(types) > 1 {
		return nil, usagef("--id names one event; it cannot be used with %d types", len(types))
	}
	invoice := f.invoice
	if invoice == "" {
		invoice = randomID("in_")
	}
	now := time.Now()
	var events []outgoing
	for _, typ := range types {
		typ = strings.TrimSpace(typ)
		if typ == "" {
			return nil, usagef("--type: empty event type")
		}
		id := f.id
		if id == "" {
			id = tmpl.newID()
		}
		e := templateEvent{
			ID: id, Type: typ, Invoice: invoice, Customer: f.customer, Amount: f.amount, Currency: f.currency,
			Options: f.options,
		}
		body, signType, err := tmpl.build(e, now)
		if err != nil {
			return nil, err
		}
		ev := outgoing{id: id, typ: typ, body: body}
		if tmpl.eventID != nil {
			ev.id = tmpl.eventID(body)
		}
		if signType != typ {
			ev.signType = signType
		}
		events = append(events, ev)
	}
	return events, nil
}

// flagUsers lists the providers whose templates use the template flag name.
func flagUsers(name string) []string {
	var users []string
	for provider, tmpl := range templates {
		if slices.Contains(tmpl.flags, name) {
			users = append(users, provider)
		}
	}
	slices.Sort(users)
	return users
}

func (a *app) readEventFile(path string) (outgoing, error) {
	var body []byte
	var err error
	if path == "-" {
		body, err = io.ReadAll(os.Stdin)
	} else {
		body, err = os.ReadFile(path)
	}
	if err != nil {
		return outgoing{}, usagef("--file: %v", err)
	}
	var head struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		EventID string `json:"event_id"` // slack
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return outgoing{}, usagef("--file %s: not a JSON object: %v", path, err)
	}
	return outgoing{id: cmp.Or(head.ID, head.EventID), typ: head.Type, body: body}, nil
}

// send posts every event f.repeat times with f.concurrency requests in flight and
// prints each answer. The copies start together, so duplicates are concurrent.
func (a *app) send(f *sendFlags, events []outgoing, signer sign.Signer) error {
	var jobs []outgoing
	for _, ev := range events {
		for range f.repeat {
			jobs = append(jobs, ev)
		}
	}
	if f.shuffle {
		rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	}
	client := &http.Client{
		Timeout:   f.timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: f.concurrency, Proxy: http.ProxyFromEnvironment},
	}
	queue := make(chan outgoing, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)

	var (
		mu     sync.Mutex
		failed int
		wg     sync.WaitGroup
	)
	start := make(chan struct{})
	for range min(f.concurrency, len(jobs)) {
		wg.Go(func() {
			<-start
			for ev := range queue {
				line, ok := post(client, f.url, signer, ev)
				mu.Lock()
				fmt.Fprintln(a.stdout, line)
				if !ok {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if failed > 0 {
		return fmt.Errorf("%d of %d requests were not answered 2xx", failed, len(jobs))
	}
	return nil
}

// post sends one copy, signed now, and describes the answer in one line.
func post(client *http.Client, url string, signer sign.Signer, ev outgoing) (string, bool) {
	prefix := fmt.Sprintf("%s %s ->", orDash(ev.id), orDash(ev.typ))
	req, err := newSignedRequest(url, signer, ev)
	if err != nil {
		return fmt.Sprintf("%s error: %v", prefix, err), false
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Sprintf("%s error: %v", prefix, err), false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	answer := strings.Join(strings.Fields(string(bytes.TrimSpace(body))), " ")
	return fmt.Sprintf("%s %d %s", prefix, resp.StatusCode, answer), resp.StatusCode >= 200 && resp.StatusCode < 300
}

// newSignedRequest is sign.NewRequest (which signs URL-signed schemes for
// url), except that schemes that send the event's id and type in headers get the
// event's own.
func newSignedRequest(url string, signer sign.Signer, ev outgoing) (*http.Request, error) {
	h, err := signedHeaders(url, signer, ev)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(ev.body))
	if err != nil {
		return nil, err
	}
	req.Header = h
	return req, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
