package probe

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// A kind is what one provider's facts are: the lives they take, where the fact's id
// is, and how each Event object about it looks. docs/PROBE.md lists them.
type kind struct {
	// lives are the lives facts take in turn: fact n takes lives[n%len(lives)].
	lives []life
	// factID is the id of a fact, from its tag (unique in the run, letters, digits
	// and underscores) and its number (unique in the run).
	factID func(tag string, num int64) string
	// eventID returns the id of an event; nil when the receiver derives it from the
	// body (Twilio, Zoom) or when the event is the fact (eventIsFact).
	eventID func(ids *idSource) string
	// eventIsFact reports whether the event's id is the fact's: a Discord
	// interaction.
	eventIsFact bool
	// body builds an event's body at time at.
	body func(e *Event, f *factArgs, at time.Time) ([]byte, error)
	// signType is the type sent in a header for an event of type typ, when not typ.
	signType func(typ string) string
	// restamp reports whether the provider signs a timestamp inside the body, so
	// that every attempt's body is built anew (Linear's webhookTimestamp).
	restamp bool
}

// life is one way a fact's story goes.
type life struct {
	name  string
	steps []step
}

type step struct {
	typ  string
	role Role
}

// factArgs is what a body may say about its fact beyond its id.
type factArgs struct {
	num     int64
	options map[string]string
	created time.Time
}

func steps(outcome string, before ...string) []step {
	var s []step
	for _, t := range before {
		s = append(s, step{t, RoleStep})
	}
	return append(s, step{outcome, RoleOutcome})
}

var (
	stripePaid = life{"paid", append(steps("invoice.paid", "invoice.created", "invoice.finalized"),
		step{"invoice.payment_succeeded", RoleSecond})}
	stripeVoided  = life{"voided", steps("invoice.voided", "invoice.created", "invoice.finalized")}
	standardLives = []life{{"paid", steps("invoice.paid", "invoice.created")}}
)

// kinds are the providers' kinds, by the names of sign.Names.
var kinds = map[string]kind{
	"stripe": {
		// Every fourth invoice is voided rather than paid.
		lives:   []life{stripePaid, stripePaid, stripePaid, stripeVoided},
		factID:  func(tag string, _ int64) string { return "in_probe_" + tag },
		eventID: func(ids *idSource) string { return ids.next("evt_probe_") },
		body:    stripeBody,
	},
	"github": {
		lives:    []life{{"merged", steps("pull_request.closed", "pull_request.opened", "pull_request.synchronize")}},
		factID:   func(tag string, _ int64) string { return "PR_probe_" + tag },
		eventID:  func(*idSource) string { return NewUUID() },
		body:     githubBody,
		signType: func(typ string) string { event, _, _ := strings.Cut(typ, "."); return event },
	},
	"shopify": {
		lives:   []life{{"paid", steps("orders/paid", "orders/create", "orders/updated")}},
		factID:  func(_ string, num int64) string { return fmt.Sprintf("gid://shopify/Order/%d", num) },
		eventID: func(*idSource) string { return NewUUID() },
		body:    shopifyBody,
	},
	"slack": {
		// A message that mentions the app comes as a message event and an app_mention
		// event: two Event objects for one message.
		lives:   []life{{"posted", []step{{"message", RoleOutcome}, {"app_mention", RoleSecond}}}},
		factID:  func(tag string, _ int64) string { return "probe-" + tag },
		eventID: func(ids *idSource) string { return strings.ToUpper(ids.next("EvPROBE")) },
		body:    slackBody,
	},
	"standardwebhooks": standardKind,
	"svix":             standardKind,
	"hmac": {
		lives:   standardLives,
		factID:  standardKind.factID,
		eventID: func(ids *idSource) string { return ids.next("evt_probe_") },
		body:    hmacBody,
	},
	"discord": {
		// An interaction is delivered once, and is itself the fact.
		lives:       []life{{"command", steps("application_command")}},
		factID:      func(_ string, num int64) string { return strconv.FormatInt(num, 10) },
		eventIsFact: true,
		body:        discordBody,
	},
	"sendgrid": {
		lives:   []life{{"delivered", append(steps("delivered", "processed"), step{"open", RoleStep})}},
		factID:  func(tag string, _ int64) string { return "probe_" + tag + ".filter0001.1.0" },
		eventID: func(ids *idSource) string { return ids.next("probe_") },
		body:    sendgridBody,
	},
	"twilio": {
		lives:  []life{{"delivered", steps("message.delivered", "message.queued", "message.sent")}},
		factID: func(tag string, _ int64) string { return "SMprobe" + strings.ReplaceAll(tag, "_", "") },
		body:   twilioBody,
	},
	"square": {
		lives:   []life{{"completed", steps("payment.updated", "payment.created")}},
		factID:  func(tag string, _ int64) string { return "probe_" + tag },
		eventID: func(*idSource) string { return NewUUID() },
		body:    squareBody,
	},
	"paddle": {
		lives:   []life{{"completed", steps("transaction.completed", "transaction.created", "transaction.paid")}},
		factID:  func(tag string, _ int64) string { return "txn_probe_" + tag },
		eventID: func(ids *idSource) string { return ids.next("evt_probe_") },
		body:    paddleBody,
	},
	"linear": {
		lives:   []life{{"created", append(steps("Issue.create"), step{"Issue.update", RoleStep})}},
		factID:  func(tag string, _ int64) string { return "probe-" + tag },
		eventID: func(*idSource) string { return NewUUID() },
		body:    linearBody,
		restamp: true,
	},
	"zoom": {
		lives:  []life{{"ended", steps("meeting.ended", "meeting.created", "meeting.started")}},
		factID: func(tag string, _ int64) string { return "probe-" + tag + "==" },
		body:   zoomBody,
	},
	"gitlab": {
		lives:    []life{{"merged", steps("merge_request.merge", "merge_request.open", "merge_request.update")}},
		factID:   func(_ string, num int64) string { return strconv.FormatInt(num, 10) },
		eventID:  func(*idSource) string { return NewUUID() },
		body:     gitlabBody,
		signType: func(string) string { return "Merge Request Hook" },
	},
}

var standardKind = kind{
	lives:   standardLives,
	factID:  func(tag string, _ int64) string { return "inv_probe_" + tag },
	eventID: func(ids *idSource) string { return ids.next("msg_probe_") },
	body:    standardWebhooksBody,
}

// newFact builds fact number i of scenario, the fact number num of the run.
func (k kind) newFact(run, scenario string, i int, num int64, ids *idSource, options map[string]string) (*Fact, error) {
	tag := fmt.Sprintf("%s_%s_%04d", run, scenarioTag[scenario], i)
	l := k.lives[i%len(k.lives)]
	f := &Fact{ID: k.factID(tag, num), Scenario: scenario, Life: l.name}
	args := &factArgs{num: num, options: options, created: time.Now()}
	for _, s := range l.steps {
		e := &Event{Fact: f, Type: s.typ, Role: s.role}
		switch {
		case k.eventID != nil:
			e.ID = k.eventID(ids)
		case k.eventIsFact:
			e.ID = f.ID
		}
		if k.signType != nil {
			e.signType = k.signType(s.typ)
		}
		body, err := k.body(e, args, args.created)
		if err != nil {
			return nil, err
		}
		e.body = body
		if k.restamp {
			e.restamp = func(_ []byte, at time.Time) []byte {
				b, _ := k.body(e, args, at) // built once without error above
				return b
			}
		}
		f.Events = append(f.Events, e)
	}
	return f, nil
}

// idSource makes the run's event ids.
type idSource struct {
	run string
	n   int
}

func (s *idSource) next(prefix string) string {
	s.n++
	return fmt.Sprintf("%s%s_%05d", prefix, s.run, s.n)
}

// NewUUID returns a random (version 4) UUID, the form of GitHub's, Shopify's,
// Square's, Linear's and GitLab's delivery ids.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// probeAmount is what every probe invoice, order and payment is for, in cents.
const probeAmount = 1000

// invoiceStatus is the status of the invoice a Stripe or Standard Webhooks event
// carries.
var invoiceStatus = map[string]string{
	"invoice.created": "draft", "invoice.finalized": "open", "invoice.paid": "paid",
	"invoice.payment_succeeded": "paid", "invoice.voided": "void",
}

// stripeBody is a Stripe Event object carrying the fact's invoice in the state the
// event implies.
func stripeBody(e *Event, _ *factArgs, at time.Time) ([]byte, error) {
	status := invoiceStatus[e.Type]
	paid := 0
	if status == "paid" {
		paid = probeAmount
	}
	return json.Marshal(map[string]any{
		"id": e.ID, "object": "event", "api_version": "2024-06-20", "created": at.Unix(), "type": e.Type,
		"livemode": false, "pending_webhooks": 1, "request": map[string]any{"id": nil, "idempotency_key": nil},
		"data": map[string]any{"object": map[string]any{
			"id": e.Fact.ID, "object": "invoice", "customer": "cus_hookinbox_probe", "status": status,
			"amount_due": probeAmount, "amount_paid": paid, "currency": "usd", "livemode": false,
		}},
	})
}

// githubBody is a pull_request webhook about the fact's pull request (its node_id);
// closed means merged.
func githubBody(e *Event, f *factArgs, _ time.Time) ([]byte, error) {
	_, action, _ := strings.Cut(e.Type, ".")
	number := f.num % 100000
	return json.Marshal(map[string]any{
		"action": action, "number": number,
		"pull_request": map[string]any{
			"id": f.num, "node_id": e.Fact.ID, "number": number, "title": "hookinbox probe",
			"state": map[bool]string{true: "closed", false: "open"}[action == "closed"], "merged": action == "closed",
		},
		"repository": map[string]any{"id": 1, "full_name": "hookinbox/probe"},
		"sender":     map[string]any{"login": "hookinbox-probe", "type": "User"},
	})
}

// shopifyBody is the order itself, as Shopify sends it; the fact's id is its
// admin_graphql_api_id.
func shopifyBody(e *Event, f *factArgs, at time.Time) ([]byte, error) {
	financial := "pending"
	if e.Type == "orders/paid" {
		financial = "paid"
	}
	stamp := f.created.UTC().Format(time.RFC3339)
	return json.Marshal(map[string]any{
		"id": f.num, "admin_graphql_api_id": e.Fact.ID, "name": fmt.Sprintf("#%d", f.num%100000),
		"financial_status": financial, "total_price": "10.00", "currency": "USD", "test": true,
		"created_at": stamp, "updated_at": at.UTC().Format(time.RFC3339),
	})
}

// slackBody is an Events API envelope whose event is the fact's message, which
// mentions the app; its client_msg_id is the fact's id.
func slackBody(e *Event, f *factArgs, at time.Time) ([]byte, error) {
	ts := fmt.Sprintf("%d.%06d", f.created.Unix(), f.num%1000000)
	return json.Marshal(map[string]any{
		"token": "hookinbox-probe", "team_id": "T0PROBE", "api_app_id": "A0PROBE", "type": "event_callback",
		"event_id": e.ID, "event_time": at.Unix(),
		"event": map[string]any{
			"type": e.Type, "user": "U0PROBE", "text": "<@U0PROBEBOT> hookinbox probe", "ts": ts,
			"channel": "C0PROBE", "client_msg_id": e.Fact.ID, "event_ts": ts,
		},
	})
}

// standardWebhooksBody is the specification's form: type, timestamp and data, the
// fact's invoice in data.
func standardWebhooksBody(e *Event, _ *factArgs, at time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{
		"type": e.Type, "timestamp": at.UTC().Format(time.RFC3339Nano),
		"data": map[string]any{"id": e.Fact.ID, "status": invoiceStatus[e.Type], "amount": probeAmount},
	})
}

// hmacBody is a generic event: the id and type at the endpoint's id_field and
// type_field ("id" and "type"), or in no field when it reads them from headers, and
// the fact's invoice in data.
func hmacBody(e *Event, f *factArgs, at time.Time) ([]byte, error) {
	event := map[string]any{}
	for _, field := range []struct{ what, value string }{{"id", e.ID}, {"type", e.Type}} {
		if f.options[field.what+"_header"] != "" {
			continue
		}
		path := f.options[field.what+"_field"]
		if path == "" {
			path = field.what
		}
		if err := SetPath(event, path, field.value); err != nil {
			return nil, fmt.Errorf("%s_field %s: %w", field.what, path, err)
		}
	}
	if _, ok := event["data"]; !ok {
		event["data"] = map[string]any{"id": e.Fact.ID, "status": invoiceStatus[e.Type], "amount": probeAmount}
	} else {
		return nil, fmt.Errorf("the id or type field is inside data, where the probe puts the fact")
	}
	event["created_at"] = at.UTC().Format(time.RFC3339)
	return json.Marshal(event)
}

// SetPath sets the dot path of nested objects in m to value, creating the objects:
// where the generic hmac scheme reads an event's id and type (its id_field and
// type_field). hookinbox send's hmac template uses it too.
func SetPath(m map[string]any, path, value string) error {
	keys := strings.Split(path, ".")
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("not a dot path of keys")
		}
		if i == len(keys)-1 {
			if _, taken := m[k]; taken {
				return fmt.Errorf("the other event field is at or inside %s", strings.Join(keys[:i+1], "."))
			}
			m[k] = value
			return nil
		}
		switch next := m[k].(type) {
		case nil:
			child := map[string]any{}
			m[k] = child
			m = child
		case map[string]any:
			m = next
		default:
			return fmt.Errorf("the other event field is %s", strings.Join(keys[:i+1], "."))
		}
	}
	return nil
}

// discordBody is an application command interaction; its id is the fact's.
func discordBody(e *Event, f *factArgs, _ time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{
		"id": e.Fact.ID, "application_id": "1100000000000000001", "type": 2, "version": 1,
		"token": fmt.Sprintf("hookinbox-probe-%d", f.num),
		"data":  map[string]any{"id": "1100000000000000002", "name": "hookinbox-probe", "type": 1},
	})
}

// sendgridBody is SendGrid's array of one event about the fact's message (its
// sg_message_id).
func sendgridBody(e *Event, _ *factArgs, at time.Time) ([]byte, error) {
	return json.Marshal([]map[string]any{{
		"email": "probe@example.com", "timestamp": at.Unix(), "event": e.Type,
		"sg_event_id": e.ID, "sg_message_id": e.Fact.ID, "smtp-id": "<probe@example.com>",
	}})
}

// twilioBody is a message status callback form about the fact's message (its
// MessageSid).
func twilioBody(e *Event, _ *factArgs, _ time.Time) ([]byte, error) {
	_, status, _ := strings.Cut(e.Type, ".")
	return []byte(url.Values{
		"MessageSid": {e.Fact.ID}, "MessageStatus": {status}, "AccountSid": {"ACprobe"},
		"ApiVersion": {"2010-04-01"}, "From": {"+15005550006"}, "To": {"+15005550009"},
	}.Encode()), nil
}

// squareBody is an event notification about the fact's payment.
func squareBody(e *Event, f *factArgs, _ time.Time) ([]byte, error) {
	status := "APPROVED"
	if e.Type == "payment.updated" {
		status = "COMPLETED"
	}
	return json.Marshal(map[string]any{
		"merchant_id": "MPROBE", "type": e.Type, "event_id": e.ID,
		"created_at": f.created.UTC().Format(time.RFC3339Nano),
		"data": map[string]any{"type": "payment", "id": e.Fact.ID, "object": map[string]any{
			"payment": map[string]any{"id": e.Fact.ID, "status": status, "amount_money": map[string]any{"amount": probeAmount, "currency": "USD"}},
		}},
	})
}

// paddleBody is a notification about the fact's transaction.
func paddleBody(e *Event, f *factArgs, _ time.Time) ([]byte, error) {
	_, status, _ := strings.Cut(e.Type, ".")
	return json.Marshal(map[string]any{
		"event_id": e.ID, "event_type": e.Type, "occurred_at": f.created.UTC().Format(time.RFC3339Nano),
		"notification_id": "ntf_" + strings.TrimPrefix(e.ID, "evt_"),
		"data":            map[string]any{"id": e.Fact.ID, "status": status},
	})
}

// linearBody is a delivery about the fact's issue, signed at at (webhookTimestamp).
func linearBody(e *Event, f *factArgs, at time.Time) ([]byte, error) {
	entity, action, _ := strings.Cut(e.Type, ".")
	return json.Marshal(map[string]any{
		"action": action, "type": entity, "createdAt": f.created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"data":           map[string]any{"id": e.Fact.ID, "title": "hookinbox probe"},
		"url":            "https://linear.app/hookinbox/issue/PROBE-1",
		"organizationId": "hookinbox-probe", "webhookId": "hookinbox-probe",
		"webhookTimestamp": at.UnixMilli(),
	})
}

// zoomBody is an event about the fact's meeting (its uuid). A retry carries the
// same body, from which the receiver derives the id.
func zoomBody(e *Event, f *factArgs, at time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{
		"event": e.Type, "event_ts": at.UnixMilli(),
		"payload": map[string]any{"account_id": "hookinbox-probe", "object": map[string]any{
			"uuid": e.Fact.ID, "id": strconv.FormatInt(f.num, 10), "topic": "hookinbox probe",
		}},
	})
}

// gitlabBody is a Merge Request Hook about the fact's merge request (its id).
func gitlabBody(e *Event, f *factArgs, _ time.Time) ([]byte, error) {
	_, action, _ := strings.Cut(e.Type, ".")
	state := "opened"
	if action == "merge" {
		state = "merged"
	}
	return json.Marshal(map[string]any{
		"object_kind": "merge_request", "event_type": "merge_request",
		"user":    map[string]any{"id": 1, "username": "hookinbox-probe"},
		"project": map[string]any{"id": 1, "path_with_namespace": "hookinbox/probe"},
		"object_attributes": map[string]any{
			"id": f.num, "iid": f.num % 100000, "action": action, "state": state, "title": "hookinbox probe",
		},
	})
}
