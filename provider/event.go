package provider

import (
	"encoding/json"
	"fmt"
	"strings"
)

// maxFieldPathDepth bounds a dot path into a JSON event, such as "data.object.id".
const maxFieldPathDepth = 8

// eventObject decodes a verified body as a JSON object. Keys are matched exactly
// afterwards: encoding/json's struct decoding would also accept "ID" for "id".
func eventObject(scheme string, body []byte) (map[string]json.RawMessage, error) {
	fields, ok := objectMembers(body)
	if !ok {
		return nil, fmt.Errorf("%s: event is not a JSON object: %w", scheme, ErrUnparsableEvent)
	}
	return fields, nil
}

// eventString returns the non-empty string at path in fields, a dot-separated list of
// keys into nested objects. A missing key, a step that is not an object, null and ""
// are all "has no path"; a value of another JSON type is "is not a string". With
// numbers, a JSON number is returned as its literal text, so that a numeric id such as
// 820982911946154508 keeps every digit.
func eventString(scheme string, fields map[string]json.RawMessage, path string, numbers bool) (string, error) {
	raw, ok := lookupPath(fields, path)
	if !ok || string(raw) == "null" {
		return "", fmt.Errorf("%s: event has no %s: %w", scheme, path, ErrUnparsableEvent)
	}
	if numbers && len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			return n.String(), nil
		}
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s: event %s is not a string: %w", scheme, path, ErrUnparsableEvent)
	}
	value, ok := unquote(raw) // a valid JSON string, unescaped as a name is
	if !ok {
		return "", fmt.Errorf("%s: event %s is not a string: %w", scheme, path, ErrUnparsableEvent)
	}
	if value == "" {
		return "", fmt.Errorf("%s: event has no %s: %w", scheme, path, ErrUnparsableEvent)
	}
	return value, nil
}

// lookupPath follows the dot-separated keys of path into fields.
func lookupPath(fields map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	for {
		key, rest, nested := strings.Cut(path, ".")
		raw, ok := fields[key]
		if !ok {
			return nil, false
		}
		if !nested {
			return raw, true
		}
		if fields, ok = validObjectMembers(raw); !ok { // a value of a valid document
			return nil, false
		}
		path = rest
	}
}

// validFieldPath reports whether path is a usable dot path: non-empty keys, at most
// maxFieldPathDepth of them.
func validFieldPath(path string) bool {
	keys := strings.Split(path, ".")
	if len(keys) > maxFieldPathDepth {
		return false
	}
	for _, k := range keys {
		if k == "" {
			return false
		}
	}
	return true
}
