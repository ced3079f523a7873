package provider

import (
	"encoding/json"
	"unicode/utf8"
)

// objectMembers returns the members of the JSON object doc as json.Unmarshal into a
// map[string]json.RawMessage returns them — names unescaped, the last of a repeated
// name winning, each value its JSON text without surrounding space — and false when
// doc is not valid JSON or not an object.
//
// It is that Unmarshal without its cost: one validation pass (json.Valid), then a
// walk over the top level only, which finds where each value ends by counting
// brackets outside strings, as only a valid document allows. The values are slices
// of doc, not copies (their capacity ends with them, so an append cannot write into
// doc). On a receiver's hot path, where every delivery's id and type are read, this
// was most of the time spent in verification (FuzzObjectMembers holds it to
// json.Unmarshal).
func objectMembers(doc []byte) (map[string]json.RawMessage, bool) {
	if !json.Valid(doc) {
		return nil, false
	}
	return validObjectMembers(doc)
}

// validObjectMembers is objectMembers of a document known to be valid JSON, such as a
// value objectMembers returned: it skips the validation pass.
func validObjectMembers(doc []byte) (map[string]json.RawMessage, bool) {
	i := skipSpace(doc, 0)
	if doc[i] != '{' {
		return nil, false
	}
	fields := make(map[string]json.RawMessage, 8)
	i = skipSpace(doc, i+1)
	if doc[i] == '}' {
		return fields, true
	}
	for {
		end := stringEnd(doc, i) // doc[i] is the name's opening quote
		name, ok := unquote(doc[i:end])
		if !ok {
			return nil, false
		}
		i = skipSpace(doc, skipSpace(doc, end)+1) // past the colon
		end = valueEnd(doc, i)
		fields[name] = doc[i:end:end]
		i = skipSpace(doc, end)
		if doc[i] == '}' {
			return fields, true
		}
		i = skipSpace(doc, i+1) // past the comma
	}
}

// skipSpace returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipSpace(doc []byte, i int) int {
	for i < len(doc) {
		switch doc[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string that opens at doc[i].
func stringEnd(doc []byte, i int) int {
	for j := i + 1; ; j++ {
		switch doc[j] {
		case '\\':
			j++ // the escaped byte; \uXXXX's digits are plain bytes
		case '"':
			return j + 1
		}
	}
}

// valueEnd returns the index just past the value that starts at doc[i].
func valueEnd(doc []byte, i int) int {
	switch doc[i] {
	case '"':
		return stringEnd(doc, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch doc[j] {
			case '"':
				j = stringEnd(doc, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	default: // a number, true, false or null
		j := i
		for j < len(doc) {
			switch doc[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// unquote unescapes a quoted JSON string: a member's name, or a string value.
// Plain ASCII, the usual case, is the text between the quotes; escapes and other
// bytes (invalid UTF-8 becomes U+FFFD) are decoded by encoding/json itself, so that
// the two never disagree.
func unquote(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	var name string
	if err := json.Unmarshal(quoted, &name); err != nil {
		return "", false
	}
	return name, true
}
