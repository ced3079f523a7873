package provider

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// hmacRetryWindow is the generic scheme's default retry window: the longest of the
// named providers' (Stripe's and GitHub's three days), since the sender is unknown.
const hmacRetryWindow = 72 * time.Hour

// HMACConfig configures a verifier for a provider that signs with a plain HMAC and
// has no scheme of its own here. Each field documents its default; the zero value of a
// field means that default.
//
//	provider: hmac
//	params: {header: X-Signature, prefix: "sha256=", timestamp_header: X-Timestamp}
type HMACConfig struct {
	// Secrets are the endpoint's shared secrets, used as HMAC keys as they are.
	// During a rotation there are several, and a signature by any of them is
	// accepted. At least one is required, and none may be empty or have surrounding
	// whitespace.
	Secrets []string

	// Header is the request header that carries the signature (param "header").
	// Required.
	Header string

	// Prefix is text the signature header starts with before the signature itself,
	// such as "sha256=" (param "prefix"). A header without it is malformed.
	//
	// Defaults to no prefix.
	Prefix string

	// Algorithm is the HMAC's hash, "sha256" or "sha512" (param "algorithm").
	//
	// Defaults to "sha256".
	Algorithm string

	// Encoding is how the signature is written, "hex" (either case) or "base64"
	// (standard alphabet, padded) (param "encoding").
	//
	// Defaults to "hex".
	Encoding string

	// TimestampHeader is the header that carries the signing time in Unix seconds
	// (param "timestamp_header"). When set, the timestamp must be signed (SignedPayload
	// must contain {timestamp}) and within Tolerance of now, in either direction.
	//
	// Defaults to none: the scheme then has no protection against replays.
	TimestampHeader string

	// SignedPayload is the template of the signed bytes (param "signed_payload"):
	// literal text with the placeholders {body} (the body exactly as received;
	// required, once), {timestamp} (TimestampHeader's value exactly as sent) and {id}
	// (IDHeader's value), each at most once. "v0:{timestamp}:{body}" is Slack's and
	// "{id}.{timestamp}.{body}" Standard Webhooks'. Braces are only allowed in
	// placeholders.
	//
	// Defaults to "{timestamp}.{body}" with a TimestampHeader, "{body}" without.
	SignedPayload string

	// IDHeader is the header that carries the event's id (param "id_header").
	// Exclusive with IDField.
	IDHeader string

	// IDField is the dot path of the event's id in the JSON body, e.g. "data.id"
	// (param "id_field"). A string, or a number taken as its literal text.
	//
	// Defaults to "id", unless IDHeader is set.
	IDField string

	// TypeHeader is the header that carries the event's type (param "type_header").
	// Exclusive with TypeField.
	TypeHeader string

	// TypeField is the dot path of the event's type in the JSON body, a string (param
	// "type_field").
	//
	// Defaults to "type", unless TypeHeader is set.
	TypeField string

	// Tolerance is how far the timestamp may be from now, in either direction, when
	// there is a TimestampHeader. Zero means DefaultTolerance. Negative is an error.
	Tolerance time.Duration

	// RetryWindow is how long the sender may send a delivery again (param
	// "retry_window", a Go duration such as "24h"). Negative is an error.
	//
	// Defaults to 72 hours.
	RetryWindow time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// NewHMAC returns a generic HMAC verifier, or an error that names the first setting
// of cfg that is missing or invalid. Errors identify a secret by its position, never
// by its value.
func NewHMAC(cfg HMACConfig) (*HMAC, error) {
	secrets, err := secretBytes("hmac", cfg.Secrets)
	if err != nil {
		return nil, err
	}
	v := &HMAC{secrets: secrets, prefix: cfg.Prefix, now: nowOrDefault(cfg.NowFunc)}

	for _, hd := range []struct {
		param, value string
		dst          *string
	}{
		{"header", cfg.Header, &v.header},
		{"timestamp_header", cfg.TimestampHeader, &v.timestampHeader},
		{"id_header", cfg.IDHeader, &v.idHeader},
		{"type_header", cfg.TypeHeader, &v.typeHeader},
	} {
		if hd.value != "" && !validHeaderName(hd.value) {
			return nil, fmt.Errorf("provider: hmac: %s %q is not a header name", hd.param, hd.value)
		}
		*hd.dst = http.CanonicalHeaderKey(hd.value)
	}
	switch {
	case v.header == "":
		return nil, fmt.Errorf("provider: hmac: header is required: the name of the signature header")
	case v.header == v.timestampHeader:
		return nil, fmt.Errorf("provider: hmac: timestamp_header is the signature header")
	}

	switch cfg.Algorithm {
	case "", "sha256":
		v.newHash, v.size = sha256.New, sha256.Size
	case "sha512":
		v.newHash, v.size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("provider: hmac: algorithm %q is not sha256 or sha512", cfg.Algorithm)
	}
	switch cfg.Encoding {
	case "", "hex":
	case "base64":
		v.base64 = true
	default:
		return nil, fmt.Errorf("provider: hmac: encoding %q is not hex or base64", cfg.Encoding)
	}

	template := cfg.SignedPayload
	if template == "" {
		template = "{body}"
		if v.timestampHeader != "" {
			template = "{timestamp}.{body}"
		}
	}
	if v.payload, err = parseSignedPayload(template); err != nil {
		return nil, err
	}
	uses := map[string]bool{}
	for _, p := range v.payload {
		uses[p.placeholder] = true
	}
	switch {
	case uses["timestamp"] && v.timestampHeader == "":
		return nil, fmt.Errorf("provider: hmac: signed_payload has {timestamp} but there is no timestamp_header")
	case !uses["timestamp"] && v.timestampHeader != "":
		// A timestamp outside the MAC could be changed at will, so checking it
		// would only look like replay protection.
		return nil, fmt.Errorf("provider: hmac: timestamp_header is set but signed_payload has no {timestamp}")
	case uses["id"] && v.idHeader == "":
		return nil, fmt.Errorf("provider: hmac: signed_payload has {id} but there is no id_header")
	}
	v.signsID = uses["id"]

	if v.idField, err = eventField("id", v.idHeader, cfg.IDField); err != nil {
		return nil, err
	}
	if v.typeField, err = eventField("type", v.typeHeader, cfg.TypeField); err != nil {
		return nil, err
	}

	if v.tolerance, err = toleranceOrDefault("hmac", cfg.Tolerance); err != nil {
		return nil, err
	}
	switch v.retryWindow = cfg.RetryWindow; {
	case v.retryWindow < 0:
		return nil, fmt.Errorf("provider: hmac: retry_window %s is negative", v.retryWindow)
	case v.retryWindow == 0:
		v.retryWindow = hmacRetryWindow
	}
	return v, nil
}

// eventField returns the dot path the event's what ("id" or "type") is read from: ""
// when it comes from header, field when it is set, else what itself. Setting both the
// header and the field is an error, as is a field that is not a usable dot path.
func eventField(what, header, field string) (string, error) {
	switch {
	case header != "" && field != "":
		return "", fmt.Errorf("provider: hmac: %s_header and %s_field are exclusive", what, what)
	case header != "":
		return "", nil
	case field == "":
		field = what
	}
	if !validFieldPath(field) {
		return "", fmt.Errorf("provider: hmac: %s_field %q is not a dot path of at most %d keys", what, field, maxFieldPathDepth)
	}
	return field, nil
}

// parseSignedPayload parses a signed_payload template into its parts.
func parseSignedPayload(template string) ([]payloadPart, error) {
	var parts []payloadPart
	seen := map[string]bool{}
	rest := template
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			parts = append(parts, payloadPart{literal: rest})
			break
		}
		if open > 0 {
			parts = append(parts, payloadPart{literal: rest[:open]})
		}
		if rest[open] == '}' {
			return nil, fmt.Errorf("provider: hmac: signed_payload %q has a } outside a placeholder", template)
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("provider: hmac: signed_payload %q has an unclosed {", template)
		}
		name := rest[open+1 : open+end]
		switch name {
		case "body", "timestamp", "id":
		default:
			return nil, fmt.Errorf("provider: hmac: signed_payload %q has unknown placeholder {%s} (known: {body}, {timestamp}, {id})", template, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("provider: hmac: signed_payload %q has {%s} more than once", template, name)
		}
		seen[name] = true
		parts = append(parts, payloadPart{placeholder: name})
		rest = rest[open+end+1:]
	}
	if !seen["body"] {
		return nil, fmt.Errorf("provider: hmac: signed_payload %q has no {body}", template)
	}
	return parts, nil
}

// validHeaderName reports whether name is a non-empty HTTP field name (an RFC 9110
// token) of reasonable length.
func validHeaderName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
