package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/probe"
)

// templateEvent is a test event built from send's flags.
type templateEvent struct {
	ID       string
	Type     string
	Invoice  string
	Customer string
	Amount   int64
	Currency string
	// Options are the endpoint's options (send's --option), which tell the hmac
	// template where the endpoint reads the id and type.
	Options map[string]string
}

// eventTemplate builds the test events of one provider, shaped like the events the
// provider sends, so that its verifier reads back the id and type they were built
// with, and a handler sees a payload of the usual form.
type eventTemplate struct {
	// defaultType is the event type when --type is not given.
	defaultType string
	// newID returns a new event id in the provider's form.
	newID func() string
	// flags are the template flags (templateFlags) the template uses.
	flags []string
	// build returns the body for e, created at at, and the type to sign it with, for
	// schemes that send the type in a header: the type itself, except for github,
	// whose X-GitHub-Event is the type before the action.
	build func(e templateEvent, at time.Time) (body []byte, signType string, err error)
	// eventID, when set, is the id the provider's verifier derives from a body, for
	// schemes that send none (twilio, zoom): send prints it.
	eventID func(body []byte) string
}

// templates has one template per provider name that send signs for.
var templates = map[string]eventTemplate{
	"stripe": {
		defaultType: "invoice.paid",
		newID:       func() string { return randomID("evt_") },
		flags:       []string{"invoice", "customer", "amount", "currency"},
		build:       typed(templateEvent.stripeBody),
	},
	"github": {
		defaultType: "push",
		newID:       probe.NewUUID,
		build:       templateEvent.githubBody,
	},
	"shopify": {
		defaultType: "orders/create",
		newID:       probe.NewUUID,
		flags:       []string{"amount", "currency"},
		build:       typed(templateEvent.shopifyBody),
	},
	"slack": {
		defaultType: "app_mention",
		newID:       func() string { return "Ev" + randomUpper(10) },
		build:       typed(templateEvent.slackBody),
	},
	"standardwebhooks": {
		defaultType: "invoice.paid",
		newID:       func() string { return "msg_" + randomAlphanumeric(27) },
		build:       typed(templateEvent.standardWebhooksBody),
	},
	"svix": {
		defaultType: "invoice.paid",
		newID:       func() string { return "msg_" + randomAlphanumeric(27) },
		build:       typed(templateEvent.standardWebhooksBody),
	},
	"hmac": {
		defaultType: "invoice.paid",
		newID:       func() string { return randomID("evt_") },
		build:       typed(templateEvent.hmacBody),
	},
}

// typed adapts a body builder for a template whose signed type is the event's type.
func typed(body func(templateEvent, time.Time) ([]byte, error)) func(templateEvent, time.Time) ([]byte, string, error) {
	return func(e templateEvent, at time.Time) ([]byte, string, error) {
		b, err := body(e, at)
		return b, e.Type, err
	}
}

// invoiceStatus is the status of the invoice an invoice.* event carries.
var invoiceStatus = map[string]string{
	"invoice.created":              "draft",
	"invoice.finalized":            "open",
	"invoice.paid":                 "paid",
	"invoice.payment_succeeded":    "paid",
	"invoice.voided":               "void",
	"invoice.marked_uncollectible": "uncollectible",
}

// invoiceTypes lists the invoice templates, for help texts.
const invoiceTypes = "invoice.created, invoice.finalized, invoice.paid, invoice.payment_succeeded,\n    invoice.voided, invoice.marked_uncollectible"

// stripeBody is a Stripe Event object and, for invoice.* types, an invoice in the
// state the event implies, with what the billing handlers read (data.object.id,
// customer, status, amount_paid, currency). Other types get a minimal object, e.g. to
// see an endpoint answer "ignored".
func (e templateEvent) stripeBody(created time.Time) ([]byte, error) {
	var object map[string]any
	if status, ok := invoiceStatus[e.Type]; ok {
		paid := int64(0)
		if status == "paid" {
			paid = e.Amount
		}
		object = map[string]any{
			"id": e.Invoice, "object": "invoice", "customer": e.Customer, "status": status,
			"amount_due": e.Amount, "amount_paid": paid, "currency": e.Currency, "livemode": false,
		}
	} else {
		kind, _, _ := strings.Cut(e.Type, ".")
		object = map[string]any{"id": randomID(objectPrefix(kind)), "object": kind, "livemode": false}
	}
	return marshal(map[string]any{
		"id":               e.ID,
		"object":           "event",
		"api_version":      "2024-06-20",
		"created":          created.Unix(),
		"type":             e.Type,
		"livemode":         false,
		"pending_webhooks": 1,
		"request":          map[string]any{"id": nil, "idempotency_key": nil},
		"data":             map[string]any{"object": object},
	})
}

func objectPrefix(kind string) string {
	switch kind {
	case "customer":
		return "cus_"
	case "invoice":
		return "in_"
	case "charge":
		return "ch_"
	case "payment_intent":
		return "pi_"
	}
	return "obj_"
}

// githubBody is the payload of a GitHub webhook. The type is the event
// (X-GitHub-Event) and, after a dot, the payload's action, as the github verifier
// reads them back: "push", "issues.opened", "pull_request.closed". push, issues,
// issue_comment, pull_request and ping get their event's own fields; every event
// carries the repository and the sender. The id is the delivery's, sent in
// X-GitHub-Delivery only: GitHub's payloads have no event id.
func (e templateEvent) githubBody(at time.Time) ([]byte, string, error) {
	event, action, _ := strings.Cut(e.Type, ".")
	if event == "" {
		return nil, "", usagef("--type %q: a GitHub event name before the action", e.Type)
	}
	const repoURL = "https://github.com/hookinbox/hookinbox-test"
	stamp := at.UTC().Format(time.RFC3339)
	sender := map[string]any{
		"login": "hookinbox-bot", "id": 100001, "node_id": "U_hookinbox", "type": "User",
		"site_admin": false, "html_url": "https://github.com/hookinbox-bot",
	}
	payload := map[string]any{
		"repository": map[string]any{
			"id": 200001, "node_id": "R_hookinbox", "name": "hookinbox-test",
			"full_name": "hookinbox/hookinbox-test", "private": false, "html_url": repoURL,
			"default_branch": "main",
			"owner": map[string]any{
				"login": "hookinbox", "id": 300001, "node_id": "O_hookinbox", "type": "Organization",
				"site_admin": false, "html_url": "https://github.com/hookinbox",
			},
		},
		"sender": sender,
	}
	if action != "" {
		payload["action"] = action
	}
	state := "open"
	if action == "closed" {
		state = "closed"
	}
	switch event {
	case "push":
		before, after := randomHex(20), randomHex(20)
		commit := map[string]any{
			"id": after, "tree_id": randomHex(20), "distinct": true, "message": "Test commit from hookinbox send",
			"timestamp": stamp, "url": repoURL + "/commit/" + after,
			"author":    map[string]any{"name": "Hookinbox Bot", "email": "bot@hookinbox.invalid", "username": "hookinbox-bot"},
			"committer": map[string]any{"name": "Hookinbox Bot", "email": "bot@hookinbox.invalid", "username": "hookinbox-bot"},
			"added":     []string{}, "removed": []string{}, "modified": []string{"README.md"},
		}
		payload["ref"] = "refs/heads/main"
		payload["before"], payload["after"] = before, after
		payload["created"], payload["deleted"], payload["forced"] = false, false, false
		payload["base_ref"] = nil
		payload["compare"] = repoURL + "/compare/" + before[:12] + "..." + after[:12]
		payload["commits"] = []any{commit}
		payload["head_commit"] = commit
		payload["pusher"] = map[string]any{"name": "hookinbox-bot", "email": "bot@hookinbox.invalid"}
	case "issues", "issue_comment":
		payload["issue"] = map[string]any{
			"id": 400001, "node_id": "I_hookinbox", "number": 1, "title": "Test issue from hookinbox send",
			"state": state, "user": sender, "body": "Sent by hookinbox send.", "labels": []any{},
			"html_url": repoURL + "/issues/1", "created_at": stamp, "updated_at": stamp,
		}
		if event == "issue_comment" {
			payload["comment"] = map[string]any{
				"id": 500001, "node_id": "IC_hookinbox", "body": "Test comment from hookinbox send", "user": sender,
				"html_url": repoURL + "/issues/1#issuecomment-500001", "created_at": stamp, "updated_at": stamp,
			}
		}
	case "pull_request":
		payload["number"] = 2
		payload["pull_request"] = map[string]any{
			"id": 600001, "node_id": "PR_hookinbox", "number": 2, "title": "Test pull request from hookinbox send",
			"state": state, "merged": false, "draft": false, "user": sender, "body": "Sent by hookinbox send.",
			"html_url": repoURL + "/pull/2", "created_at": stamp, "updated_at": stamp,
			"head": map[string]any{"ref": "hookinbox-test", "sha": randomHex(20)},
			"base": map[string]any{"ref": "main", "sha": randomHex(20)},
		}
	case "ping":
		payload["zen"] = "Keep it logically awesome."
		payload["hook_id"] = 700001
		payload["hook"] = map[string]any{
			"type": "Repository", "id": 700001, "name": "web", "active": true, "events": []string{"*"},
			"config":     map[string]any{"content_type": "json", "insecure_ssl": "0"},
			"created_at": stamp, "updated_at": stamp,
		}
	}
	body, err := marshal(payload)
	return body, event, err
}

// shopifyGraphQLTypes names the Admin API type of the resource of a topic, for
// admin_graphql_api_id.
var shopifyGraphQLTypes = map[string]string{
	"orders": "Order", "products": "Product", "customers": "Customer", "fulfillments": "Fulfillment",
	"refunds": "Refund", "checkouts": "Checkout", "draft_orders": "DraftOrder", "collections": "Collection",
}

// shopifyBody is the resource a Shopify webhook carries, which is the body itself:
// Shopify sends the event's id and topic only in headers. orders/* topics get an
// order of --amount in --currency, in the state the topic implies; other topics a
// bare resource with an id and timestamps.
func (e templateEvent) shopifyBody(at time.Time) ([]byte, error) {
	resource, _, _ := strings.Cut(e.Type, "/")
	stamp := at.Format("2006-01-02T15:04:05-07:00")
	id := randomShopifyID()
	object := map[string]any{"id": id, "created_at": stamp, "updated_at": stamp}
	if gql, ok := shopifyGraphQLTypes[resource]; ok {
		object["admin_graphql_api_id"] = fmt.Sprintf("gid://shopify/%s/%d", gql, id)
	}
	if resource == "orders" {
		price := fmt.Sprintf("%.2f", float64(e.Amount)/100)
		currency := strings.ToUpper(e.Currency)
		financial, fulfillment, cancelled := "pending", any(nil), any(nil)
		switch e.Type {
		case "orders/paid":
			financial = "paid"
		case "orders/fulfilled":
			financial, fulfillment = "paid", "fulfilled"
		case "orders/cancelled":
			financial, cancelled = "voided", stamp
			object["cancel_reason"] = "customer"
		}
		customer, item := randomShopifyID(), randomShopifyID()
		for k, v := range map[string]any{
			"name": "#1001", "order_number": 1001, "email": "customer@example.com", "test": true,
			"processed_at": stamp, "cancelled_at": cancelled,
			"currency": currency, "presentment_currency": currency,
			"total_price": price, "subtotal_price": price, "total_tax": "0.00",
			"financial_status": financial, "fulfillment_status": fulfillment,
			"line_items": []any{map[string]any{
				"id": item, "admin_graphql_api_id": fmt.Sprintf("gid://shopify/LineItem/%d", item),
				"title": "Hookinbox test product", "sku": "HOOKINBOX-TEST", "quantity": 1, "price": price,
			}},
			"customer": map[string]any{
				"id": customer, "admin_graphql_api_id": fmt.Sprintf("gid://shopify/Customer/%d", customer),
				"email": "customer@example.com",
			},
		} {
			object[k] = v
		}
	}
	return marshal(object)
}

// Slack test workspace ids, in Slack's forms.
const (
	slackTeamID  = "T0HOOKINBOX"
	slackAppID   = "A0HOOKINBOX"
	slackUserID  = "U0HOOKINBOX"
	slackBotID   = "U0HOOKINBOT"
	slackChannel = "C0HOOKINBOX"
)

// slackBody is an Events API event_callback envelope whose inner event has the type:
// event_id and event.type are what the slack verifier reads. Message-like types
// (message, app_mention) carry a user, text and channel.
func (e templateEvent) slackBody(at time.Time) ([]byte, error) {
	ts := fmt.Sprintf("%d.%06d", at.Unix(), at.Nanosecond()/1000)
	inner := map[string]any{"type": e.Type, "event_ts": ts}
	switch e.Type {
	case "message":
		inner["channel_type"] = "channel"
		fallthrough
	case "app_mention":
		inner["user"], inner["channel"], inner["ts"] = slackUserID, slackChannel, ts
		inner["text"] = "<@" + slackBotID + "> test event from hookinbox send"
	}
	return marshal(map[string]any{
		"token":      "hookinbox-send-verification-token",
		"team_id":    slackTeamID,
		"api_app_id": slackAppID,
		"event":      inner,
		"type":       "event_callback",
		"event_id":   e.ID,
		"event_time": at.Unix(),
		"authorizations": []any{map[string]any{
			"enterprise_id": nil, "team_id": slackTeamID, "user_id": slackBotID,
			"is_bot": true, "is_enterprise_install": false,
		}},
		"is_ext_shared_channel": false,
		"event_context":         "4-" + randomAlphanumeric(40),
	})
}

// standardWebhooksBody is the specification's event form: the type, the time it
// happened and the data, here a resource of the type's first part ("invoice" for
// invoice.paid). The id is sent only in webhook-id (or svix-id).
func (e templateEvent) standardWebhooksBody(at time.Time) ([]byte, error) {
	kind, _, _ := strings.Cut(e.Type, ".")
	return marshal(map[string]any{
		"type":      e.Type,
		"timestamp": at.UTC().Format(time.RFC3339Nano),
		"data":      map[string]any{"id": probe.NewUUID(), "type": kind},
	})
}

// hmacBody is a generic event for the hmac scheme: the id and the type at the dot
// paths the endpoint reads them from (its id_field and type_field, "id" and "type" by
// default), or in no field when it reads them from headers (id_header,
// type_header), and a creation time and data object where those paths leave room.
func (e templateEvent) hmacBody(at time.Time) ([]byte, error) {
	event := map[string]any{}
	for _, f := range []struct{ what, value string }{{"id", e.ID}, {"type", e.Type}} {
		if e.Options[f.what+"_header"] != "" {
			continue
		}
		option := f.what + "_field"
		path := e.Options[option]
		if path == "" {
			path = f.what
		}
		if err := probe.SetPath(event, path, f.value); err != nil {
			return nil, usagef("--option %s=%s: %v", option, path, err)
		}
	}
	if _, ok := event["created_at"]; !ok {
		event["created_at"] = at.UTC().Format(time.RFC3339)
	}
	if _, ok := event["data"]; !ok {
		event["data"] = map[string]any{"id": randomID("obj_")}
	}
	return marshal(event)
}

// marshal is json.Marshal without the escaping of <, > and & for HTML, which
// providers do not apply either (Slack's mentions are "<@U...>").
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// randomID returns prefix and 24 random letters and digits, like Stripe's ids.
func randomID(prefix string) string { return prefix + randomAlphanumeric(24) }

// randomAlphanumeric returns n random letters and digits.
func randomAlphanumeric(n int) string {
	return randomFrom("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", n)
}

// randomUpper returns n random capital letters and digits, like Slack's ids.
func randomUpper(n int) string { return randomFrom("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", n) }

func randomFrom(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// randomHex returns the hex of n random bytes, e.g. a commit's 40-digit SHA for 20.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// randomShopifyID returns a positive 64-bit id in the range of Shopify's, which have
// 13 to 19 digits.
func randomShopifyID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return 1_000_000_000_000 + int64(n%8_000_000_000_000_000)
}
