package sign

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// EventSigner is a Signer for a scheme that carries the event's id or type in headers
// rather than in the signed body: GitHub, Shopify, Standard Webhooks (the id) and the
// generic hmac scheme when configured with id or type headers.
//
// Sign takes them from the body: the id from its top-level JSON "id" (a string, or a
// number as its literal text), the type from its top-level "type" string, and fails
// naming what is missing when the scheme needs it. SignEvent takes them as arguments,
// for real provider payloads that have no such fields:
//
//	h, err := sign.GitHub(secret).SignEvent(body, time.Now(), "72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues")
type EventSigner interface {
	Signer

	// SignEvent returns the headers the provider would send with body at time at for
	// the event id and typ. An argument the scheme takes from the body is ignored;
	// one it needs must not be empty.
	SignEvent(body []byte, at time.Time, id, typ string) (http.Header, error)
}

// eventFromBody returns the top-level "id" and "type" of body, each "" if absent or of
// another JSON type.
func eventFromBody(body []byte) (id, typ string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return "", ""
	}
	if raw, ok := fields["id"]; ok {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			id = n.String()
		} else {
			_ = json.Unmarshal(raw, &id)
		}
	}
	if raw, ok := fields["type"]; ok {
		_ = json.Unmarshal(raw, &typ)
	}
	return id, typ
}

// signFromBody is Sign for an EventSigner: it derives the id and type from body, and
// fails naming the field and the header it was needed for when one is missing.
// idHeader and typeHeader are "" when the scheme does not need them.
func signFromBody(s EventSigner, scheme string, body []byte, at time.Time, idHeader, typeHeader string) (http.Header, error) {
	id, typ := eventFromBody(body)
	switch {
	case idHeader != "" && id == "":
		return nil, fmt.Errorf("%s: body has no \"id\" to send as %s; use SignEvent", scheme, idHeader)
	case typeHeader != "" && typ == "":
		return nil, fmt.Errorf("%s: body has no \"type\" to send as %s; use SignEvent", scheme, typeHeader)
	}
	return s.SignEvent(body, at, id, typ)
}

// needEvent fails naming the header when SignEvent lacks an id or type the scheme
// sends in a header.
func needEvent(scheme, idHeader, id, typeHeader, typ string) error {
	switch {
	case idHeader != "" && id == "":
		return fmt.Errorf("%s: SignEvent needs an id for %s", scheme, idHeader)
	case typeHeader != "" && typ == "":
		return fmt.Errorf("%s: SignEvent needs a type for %s", scheme, typeHeader)
	}
	return nil
}
