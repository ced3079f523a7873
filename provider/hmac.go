package provider

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
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

// HMAC verifies a configurable HMAC signature scheme. It is safe for concurrent use.
//
// The id and type, when they come from headers that SignedPayload does not include,
// are not signed: a captured delivery can then be replayed under a fresh id. Put {id}
// in SignedPayload when the sender signs it.
type HMAC struct {
	secrets         [][]byte
	header          string
	prefix          string
	newHash         func() hash.Hash
	size            int
	base64          bool
	timestampHeader string
	payload         []payloadPart
	idHeader        string
	signsID         bool
	idField         string
	typeHeader      string
	typeField       string
	tolerance       time.Duration
	retryWindow     time.Duration
	now             func() time.Time
}

var _ Verifier = (*HMAC)(nil)

// payloadPart is a piece of the signed payload: literal text, or one placeholder.
type payloadPart struct {
	literal     string
	placeholder string // "body", "timestamp" or "id"; "" for literal text
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

	switch {
	case v.idHeader != "" && cfg.IDField != "":
		return nil, fmt.Errorf("provider: hmac: id_header and id_field are exclusive")
	case v.idHeader == "":
		v.idField = cfg.IDField
		if v.idField == "" {
			v.idField = "id"
		}
		if !validFieldPath(v.idField) {
			return nil, fmt.Errorf("provider: hmac: id_field %q is not a dot path of at most %d keys", v.idField, maxFieldPathDepth)
		}
	}
	switch {
	case v.typeHeader != "" && cfg.TypeField != "":
		return nil, fmt.Errorf("provider: hmac: type_header and type_field are exclusive")
	case v.typeHeader == "":
		v.typeField = cfg.TypeField
		if v.typeField == "" {
			v.typeField = "type"
		}
		if !validFieldPath(v.typeField) {
			return nil, fmt.Errorf("provider: hmac: type_field %q is not a dot path of at most %d keys", v.typeField, maxFieldPathDepth)
		}
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

// Name returns "hmac".
func (*HMAC) Name() string { return "hmac" }

// RetryWindow returns the configured retry window, 72 hours by default.
func (v *HMAC) RetryWindow() time.Duration { return v.retryWindow }

// Verify accepts the delivery only if the signature header is the prefix followed by
// the encoded HMAC, under one of the configured secrets, of the signed payload built
// from body exactly as received, and, with a timestamp header, the timestamp is within
// the tolerance of now. Only then are the id and type read, from their headers or the
// JSON body.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (v *HMAC) Verify(h http.Header, body []byte) (Verified, error) {
	value, err := headerValue(h, "hmac", v.header, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if value == "" {
		return Verified{}, fmt.Errorf("hmac: no %s header: %w", v.header, ErrMissingSignature)
	}
	encoded, ok := strings.CutPrefix(value, v.prefix)
	if !ok {
		return Verified{}, fmt.Errorf("hmac: %s does not start with the configured prefix: %w", v.header, ErrMalformedSignature)
	}
	candidate, encode, err := v.decodeSignature(encoded)
	if err != nil {
		return Verified{}, err
	}

	var ts, id string
	var signedAt time.Time
	if v.timestampHeader != "" {
		if ts, err = headerValue(h, "hmac", v.timestampHeader, ErrMalformedSignature); err != nil {
			return Verified{}, err
		}
		if ts == "" {
			return Verified{}, fmt.Errorf("hmac: no %s header: %w", v.timestampHeader, ErrMissingSignature)
		}
		if signedAt, err = parseTimestampHeader("hmac", v.timestampHeader, ts); err != nil {
			return Verified{}, err
		}
	}
	if v.signsID {
		// Read before the MAC because it is signed; an id that is not signed is
		// read after the MAC, and its absence is an unusable event.
		if id, err = headerValue(h, "hmac", v.idHeader, ErrMalformedSignature); err != nil {
			return Verified{}, err
		}
	}

	message := make([][]byte, len(v.payload))
	for i, p := range v.payload {
		switch p.placeholder {
		case "body":
			message[i] = body
		case "timestamp":
			message[i] = []byte(ts)
		case "id":
			if id == "" {
				return Verified{}, fmt.Errorf("hmac: no %s header, which is signed: %w", v.idHeader, ErrMissingSignature)
			}
			message[i] = []byte(id)
		default:
			message[i] = []byte(p.literal)
		}
	}
	index := matchMAC(v.secrets, v.newHash, message, encode, [][]byte{candidate})
	if index < 0 {
		return Verified{}, fmt.Errorf("hmac: signature matches none of %d secrets: %w", len(v.secrets), ErrNoValidSignature)
	}
	if v.timestampHeader != "" {
		// After the MAC, so that a tolerance error always means a genuine signature.
		if err := checkSkew("hmac", v.now(), signedAt, v.tolerance); err != nil {
			return Verified{}, err
		}
	}

	id, typ, err := v.event(h, id, body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt}, nil
}

// decodeSignature returns what matchMAC compares: the digest for hex, the text for
// base64 (with base64Std to encode each HMAC). A value that cannot be the encoding of
// a digest of the configured algorithm is refused as no valid signature; in particular
// a truncated signature never matches a prefix of the real one.
func (v *HMAC) decodeSignature(encoded string) (candidate []byte, encode func([]byte) []byte, err error) {
	if v.base64 {
		if want := base64.StdEncoding.EncodedLen(v.size); len(encoded) != want {
			return nil, nil, fmt.Errorf("hmac: %s signature is %d characters, want %d: %w",
				v.header, len(encoded), want, ErrNoValidSignature)
		}
		return []byte(encoded), base64Std, nil
	}
	if want := hex.EncodedLen(v.size); len(encoded) != want {
		return nil, nil, fmt.Errorf("hmac: %s signature has %d hex digits, want %d: %w",
			v.header, len(encoded), want, ErrNoValidSignature)
	}
	digest, err := hex.DecodeString(encoded)
	if err != nil {
		return nil, nil, fmt.Errorf("hmac: %s signature is not hex: %w", v.header, ErrNoValidSignature)
	}
	return digest, nil, nil
}

// event extracts the id and type of a verified delivery. id is the id header's value
// if it was signed, and so already read.
func (v *HMAC) event(h http.Header, id string, body []byte) (string, string, error) {
	var typ string
	var err error
	if v.idHeader != "" && !v.signsID {
		if id, err = headerValue(h, "hmac", v.idHeader, ErrUnparsableEvent); err != nil {
			return "", "", err
		}
	}
	if v.typeHeader != "" {
		if typ, err = headerValue(h, "hmac", v.typeHeader, ErrUnparsableEvent); err != nil {
			return "", "", err
		}
		if typ == "" {
			return "", "", fmt.Errorf("hmac: no %s header: %w", v.typeHeader, ErrUnparsableEvent)
		}
	}
	if v.idHeader != "" && id == "" {
		return "", "", fmt.Errorf("hmac: no %s header: %w", v.idHeader, ErrUnparsableEvent)
	}
	if v.idField == "" && v.typeField == "" {
		return id, typ, nil
	}

	object, err := eventObject("hmac", body)
	if err != nil {
		return "", "", err
	}
	if v.idField != "" {
		if id, err = eventString("hmac", object, v.idField, true); err != nil {
			return "", "", err
		}
	}
	if v.typeField != "" {
		if typ, err = eventString("hmac", object, v.typeField, false); err != nil {
			return "", "", err
		}
	}
	return id, typ, nil
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
