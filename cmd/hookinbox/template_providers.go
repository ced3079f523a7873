package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/probe"
)

// The templates of the providers added after the first seven: each body is shaped
// like the provider's own, with what its verifier reads the id and type from.

func init() {
	templates["discord"] = eventTemplate{
		defaultType: "application_command",
		newID:       randomSnowflake,
		build:       typed(templateEvent.discordBody),
	}
	templates["sendgrid"] = eventTemplate{
		defaultType: "delivered",
		newID:       func() string { return randomAlphanumeric(22) },
		build:       typed(templateEvent.sendgridBody),
	}
	templates["twilio"] = eventTemplate{
		defaultType: "message.delivered",
		newID:       func() string { return "" }, // the Sid is made per type
		build:       typed(templateEvent.twilioBody),
		eventID:     twilioDerivedID,
	}
	templates["square"] = eventTemplate{
		defaultType: "payment.updated",
		newID:       probe.NewUUID,
		build:       typed(templateEvent.squareBody),
	}
	templates["paddle"] = eventTemplate{
		defaultType: "transaction.completed",
		newID:       func() string { return "evt_" + strings.ToLower(randomUpper(26)) },
		build:       typed(templateEvent.paddleBody),
	}
	templates["linear"] = eventTemplate{
		defaultType: "Issue.create",
		newID:       probe.NewUUID,
		build:       typed(templateEvent.linearBody),
	}
	templates["zoom"] = eventTemplate{
		defaultType: "meeting.started",
		newID:       func() string { return "" }, // derived from the body
		build:       typed(templateEvent.zoomBody),
		eventID:     zoomDerivedID,
	}
	templates["gitlab"] = eventTemplate{
		defaultType: "Push Hook",
		newID:       probe.NewUUID,
		build:       typed(templateEvent.gitlabBody),
	}
}

// discordTypes are the numbers of Discord's interaction types by the names the
// verifier gives them.
var discordTypes = map[string]int{
	"ping": 1, "application_command": 2, "message_component": 3,
	"application_command_autocomplete": 4, "modal_submit": 5,
}

// discordBody is an interaction of the type named, e.g. application_command.
func (e templateEvent) discordBody(time.Time) ([]byte, error) {
	n, ok := discordTypes[e.Type]
	if !ok {
		return nil, usagef("--type %s: a Discord interaction type (ping, application_command, message_component, application_command_autocomplete, modal_submit)", e.Type)
	}
	return marshal(map[string]any{
		"id": e.ID, "application_id": randomSnowflake(), "type": n, "token": randomAlphanumeric(32), "version": 1,
		"data": map[string]any{"id": randomSnowflake(), "name": "hookinbox-test", "type": 1},
	})
}

// sendgridBody is SendGrid's array of one event of the type named (delivered,
// open, bounce, ...).
func (e templateEvent) sendgridBody(at time.Time) ([]byte, error) {
	return marshal([]map[string]any{{
		"email": "test@example.com", "timestamp": at.Unix(), "event": e.Type,
		"sg_event_id": e.ID, "sg_message_id": randomAlphanumeric(22) + ".filter0001.1.0",
		"smtp-id": "<" + randomAlphanumeric(16) + "@example.com>",
	}})
}

// twilioResources are the Sid prefix and parameters of each resource the twilio
// template can report a status of.
var twilioResources = map[string]struct{ sid, prefix, status string }{
	"message":   {"MessageSid", "SM", "MessageStatus"},
	"call":      {"CallSid", "CA", "CallStatus"},
	"recording": {"RecordingSid", "RE", "RecordingStatus"},
}

// twilioBody is a status callback, a form: "message.delivered" is a message's
// MessageStatus delivered, "call.completed" a call's CallStatus completed.
func (e templateEvent) twilioBody(time.Time) ([]byte, error) {
	noun, status, _ := strings.Cut(e.Type, ".")
	r, ok := twilioResources[noun]
	if !ok || status == "" {
		return nil, usagef("--type %s: a Twilio resource and status (message.delivered, call.completed, recording.completed)", e.Type)
	}
	sid := e.ID
	if sid == "" {
		sid = r.prefix + randomHex(16)
	}
	form := url.Values{
		r.sid: {sid}, r.status: {status}, "AccountSid": {"AC" + randomHex(16)}, "ApiVersion": {"2010-04-01"},
		"From": {"+15005550006"}, "To": {"+15005550009"},
	}
	if noun == "recording" {
		form.Set("CallSid", "CA"+randomHex(16))
	}
	return []byte(form.Encode()), nil
}

// twilioDerivedID is the id the twilio verifier derives from a template's form: the
// Sid, ":", and 32 hex digits of the SHA-256 of the parameters' JSON object.
func twilioDerivedID(body []byte) string {
	form, _ := url.ParseQuery(string(body))
	params := map[string]string{}
	for k, vs := range form {
		params[k] = vs[0]
	}
	payload, _ := json.Marshal(params)
	sum := sha256.Sum256(payload)
	for _, sid := range []string{"RecordingSid", "MessageSid", "CallSid"} {
		if params[sid] != "" {
			return params[sid] + ":" + hex.EncodeToString(sum[:])[:32]
		}
	}
	return hex.EncodeToString(sum[:])
}

// squareBody is a Square event notification of the type named (payment.updated).
func (e templateEvent) squareBody(at time.Time) ([]byte, error) {
	kind, _, _ := strings.Cut(e.Type, ".")
	object := randomUpper(22)
	return marshal(map[string]any{
		"merchant_id": randomUpper(13), "type": e.Type, "event_id": e.ID,
		"created_at": at.UTC().Format(time.RFC3339Nano),
		"data": map[string]any{"type": kind, "id": object, "object": map[string]any{
			kind: map[string]any{"id": object, "status": "COMPLETED"},
		}},
	})
}

// paddleBody is a Paddle Billing notification of the type named
// (transaction.completed).
func (e templateEvent) paddleBody(at time.Time) ([]byte, error) {
	kind, _, _ := strings.Cut(e.Type, ".")
	return marshal(map[string]any{
		"event_id": e.ID, "event_type": e.Type, "occurred_at": at.UTC().Format(time.RFC3339Nano),
		"notification_id": "ntf_" + strings.ToLower(randomUpper(26)),
		"data":            map[string]any{"id": paddlePrefix(kind) + strings.ToLower(randomUpper(26)), "status": "completed"},
	})
}

func paddlePrefix(kind string) string {
	switch kind {
	case "transaction":
		return "txn_"
	case "subscription":
		return "sub_"
	case "customer":
		return "ctm_"
	}
	return kind + "_"
}

// linearBody is a Linear delivery of the type named, the entity and the action:
// "Issue.create", "Comment.remove". It carries webhookTimestamp, the time it is
// built, which Linear signs in the body.
func (e templateEvent) linearBody(at time.Time) ([]byte, error) {
	entity, action, ok := strings.Cut(e.Type, ".")
	if !ok || entity == "" || action == "" {
		return nil, usagef("--type %s: a Linear entity and action (Issue.create, Comment.update)", e.Type)
	}
	return marshal(map[string]any{
		"action": action, "type": entity, "createdAt": at.UTC().Format("2006-01-02T15:04:05.000Z"),
		"data":           map[string]any{"id": probe.NewUUID(), "title": "hookinbox test"},
		"url":            "https://linear.app/hookinbox/issue/TEST-1",
		"organizationId": probe.NewUUID(), "webhookId": probe.NewUUID(),
		"webhookTimestamp": at.UnixMilli(),
	})
}

// zoomBody is a Zoom event of the type named (meeting.started).
func (e templateEvent) zoomBody(at time.Time) ([]byte, error) {
	return marshal(map[string]any{
		"event": e.Type, "event_ts": at.UnixMilli(),
		"payload": map[string]any{"account_id": randomAlphanumeric(22), "object": map[string]any{
			"id": strconv.FormatInt(randomShopifyID()%100_000_000_000, 10), "uuid": randomAlphanumeric(22) + "==", "topic": "hookinbox test",
		}},
	})
}

// zoomDerivedID is the id the zoom verifier derives: event, event_ts and 32 hex
// digits of the body's SHA-256.
func zoomDerivedID(body []byte) string {
	var head struct {
		Event   string      `json:"event"`
		EventTS json.Number `json:"event_ts"`
	}
	_ = json.Unmarshal(body, &head)
	sum := sha256.Sum256(body)
	return fmt.Sprintf("%s:%s:%s", head.Event, head.EventTS, hex.EncodeToString(sum[:])[:32])
}

// gitlabBody is the payload of the GitLab hook named ("Push Hook", "Merge Request
// Hook"), its object_kind the hook's name in snake case.
func (e templateEvent) gitlabBody(time.Time) ([]byte, error) {
	kind := strings.ReplaceAll(strings.ToLower(strings.TrimSuffix(e.Type, " Hook")), " ", "_")
	body := map[string]any{
		"object_kind": kind, "event_name": kind,
		"project": map[string]any{"id": 1, "path_with_namespace": "hookinbox/test"},
		"user":    map[string]any{"id": 1, "username": "hookinbox"},
	}
	if kind == "push" || kind == "tag_push" {
		body["ref"], body["checkout_sha"] = "refs/heads/main", randomHex(20)
	} else {
		body["object_attributes"] = map[string]any{"id": randomShopifyID() % 1_000_000, "action": "open"}
	}
	return marshal(body)
}

// randomSnowflake returns a random 19-digit id of Discord's form.
func randomSnowflake() string {
	return strconv.FormatInt(1_000_000_000_000_000_000+randomShopifyID()%8_000_000_000_000_000_000, 10)
}
