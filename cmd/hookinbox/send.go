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
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/hookinboxtest"
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
}

// templateFlags shape a template and make no sense with --file.
var templateFlags = []string{"invoice", "customer", "amount", "currency"}

// outgoing is one event to send, with the id and type it is printed under and that
// schemes carrying them in headers (github, shopify, standardwebhooks, hmac) send.
type outgoing struct {
	id, typ string
	body    []byte
}

func (a *app) sendCommand() *cobra.Command {
	var f sendFlags
	cmd := &cobra.Command{
		Use:   "send",
		Short: "Sign and send test events to an endpoint",
		Long: `Sign test events the way the provider does and POST them, like the Stripe CLI's
trigger, then print each answer as: EVENT_ID TYPE -> STATUS BODY. Exits 1 if any
answer was not 2xx (or did not come).

Events come from a built-in Stripe template (--type, default invoice.paid) or, with
--file, from a JSON file sent byte for byte ("-" reads stdin). Templates carry an
invoice in the state the type implies for:
  ` + invoiceTypes + `
Any other type is sent with a minimal object (e.g. to see an "ignored" answer). Each
template event gets a new id (evt_...) unless --id is given; the events of one run
share one invoice (--invoice, default a new in_... id).

--repeat N sends every event N times (same id and body: duplicates), --concurrency C
sends with C requests in flight, all starting together, and --shuffle sends in random
order (with several --type values: out-of-order delivery).

--provider selects the signature scheme: stripe (default), github, shopify, slack,
standardwebhooks, svix or hmac, with the endpoint's options as --option key=value
(e.g. --option header=X-Signature --option algorithm=sha256 for hmac). Schemes that
send the event's id and type in headers take them from the event; with --file,
--id and --type set them for such schemes.`,
		Example: `  # an invoice payment, then the same event again: processed, then duplicate
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --id evt_demo_1 --type invoice.paid
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --id evt_demo_1 --type invoice.paid

  # ten copies at once: one processed, nine duplicates
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --repeat 10 --concurrency 10

  # one invoice's lifecycle, out of order
  hookinbox send --secret-env STRIPE_WEBHOOK_SECRET --shuffle \
      --type invoice.created,invoice.finalized,invoice.paid,invoice.payment_succeeded`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			events, signer, err := a.prepareSend(cmd, &f)
			if err != nil {
				return err
			}
			return a.send(&f, events, signer)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "http://127.0.0.1:8080/webhooks/stripe", "endpoint URL")
	fl.StringVar(&f.provider, "provider", "stripe", "signature scheme: stripe, github, shopify, slack, standardwebhooks, svix or hmac")
	fl.StringToStringVar(&f.options, "option", nil, "scheme option key=value, as in the endpoint's options (repeatable)")
	fl.StringVar(&f.secret, "secret", "", "signing secret (prefer --secret-env: arguments are visible to other users)")
	fl.StringVar(&f.secretEnv, "secret-env", "", "environment variable holding the signing secret")
	fl.StringSliceVar(&f.types, "type", []string{"invoice.paid"}, "event type; repeat or separate with commas for several events (with --file: the type header of schemes that send one)")
	fl.StringVar(&f.id, "id", "", "event id (default a new evt_... per event; only with one --type; with --file: the id header of schemes that send one)")
	fl.StringVar(&f.invoice, "invoice", "", "invoice id of invoice.* templates (default a new in_...)")
	fl.StringVar(&f.customer, "customer", "cus_hookinbox_test", "customer id of invoice.* templates")
	fl.Int64Var(&f.amount, "amount", 1000, "invoice amount in the currency's smallest unit")
	fl.StringVar(&f.currency, "currency", "usd", "invoice currency")
	fl.StringVar(&f.file, "file", "", `send this JSON file as the body ("-" for stdin) instead of a template`)
	fl.IntVar(&f.repeat, "repeat", 1, "send every event this many times")
	fl.IntVar(&f.concurrency, "concurrency", 1, "requests in flight at once")
	fl.BoolVar(&f.shuffle, "shuffle", false, "send in random order")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of each request")
	return cmd
}

// prepareSend checks the flags and builds the events and the signer.
func (a *app) prepareSend(cmd *cobra.Command, f *sendFlags) ([]outgoing, hookinboxtest.Signer, error) {
	switch {
	case f.repeat < 1:
		return nil, nil, usagef("--repeat must be at least 1")
	case f.concurrency < 1:
		return nil, nil, usagef("--concurrency must be at least 1")
	case f.timeout <= 0:
		return nil, nil, usagef("--timeout must be positive")
	case f.secret != "" && f.secretEnv != "":
		return nil, nil, usagef("give --secret or --secret-env, not both")
	}
	secret := f.secret
	if f.secretEnv != "" {
		secret, _ = a.lookupEnv(f.secretEnv)
		if secret == "" {
			return nil, nil, usagef("--secret-env: environment variable %s is empty or unset", f.secretEnv)
		}
	}
	if secret == "" {
		return nil, nil, usagef("no signing secret: pass --secret-env VAR (or --secret)")
	}
	signer, err := hookinboxtest.SignerFor(f.provider, []string{secret}, f.options)
	if err != nil {
		return nil, nil, usagef("--provider %s: %v", f.provider, strings.TrimPrefix(err.Error(), "hookinboxtest: "))
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
			if _, ok := signer.(hookinboxtest.EventSigner); !ok {
				return nil, nil, usagef("--id and --type with --file: %s takes them from the body", f.provider)
			}
			if len(f.types) > 1 {
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

	if len(f.types) == 0 {
		return nil, nil, usagef("--type: at least one event type")
	}
	if f.id != "" && len(f.types) > 1 {
		return nil, nil, usagef("--id names one event; it cannot be used with %d types", len(f.types))
	}
	invoice := f.invoice
	if invoice == "" {
		invoice = randomID("in_")
	}
	now := time.Now()
	var events []outgoing
	for _, typ := range f.types {
		typ = strings.TrimSpace(typ)
		if typ == "" {
			return nil, nil, usagef("--type: empty event type")
		}
		id := f.id
		if id == "" {
			id = randomID("evt_")
		}
		body, err := templateEvent{ID: id, Type: typ, Invoice: invoice, Customer: f.customer, Amount: f.amount, Currency: f.currency}.body(f.provider, now)
		if err != nil {
			return nil, nil, err
		}
		events = append(events, outgoing{id: id, typ: typ, body: body})
	}
	return events, signer, nil
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
func (a *app) send(f *sendFlags, events []outgoing, signer hookinboxtest.Signer) error {
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
func post(client *http.Client, url string, signer hookinboxtest.Signer, ev outgoing) (string, bool) {
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

// newSignedRequest is hookinboxtest.NewRequest, except that schemes that send the
// event's id and type in headers get the event's own.
func newSignedRequest(url string, signer hookinboxtest.Signer, ev outgoing) (*http.Request, error) {
	es, ok := signer.(hookinboxtest.EventSigner)
	if !ok {
		return hookinboxtest.NewRequest(url, signer, ev.body)
	}
	h, err := es.SignEvent(ev.body, time.Now(), ev.id, ev.typ)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(ev.body))
	if err != nil {
		return nil, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
