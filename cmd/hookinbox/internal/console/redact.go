package console

import (
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// redacted is what a redacted value becomes.
const redacted = "[redacted]"

// minRedactedValue is the shortest value hidden wherever it appears in text: shorter
// ones (a "1", a "no") would blank out unrelated words of every error.
const minRedactedValue = 3

// redaction hides what Config.Redact names. A pattern matches an object key, ignoring
// case, with * standing for any run of characters ("email", "*email*", "card_*").
// A matching key's value is replaced in a payload at any depth; and since a handler's
// error or an operator's note may quote it, every value found under a matching key
// is also replaced wherever it appears in the texts shown beside that payload.
type redaction struct {
	patterns []string // lower case
	// payloadOnly, set only by tests (export_test.go), redacts payloads and nothing
	// else: the broken variant the canary test catches.
	payloadOnly bool
}

func newRedaction(patterns []string) *redaction {
	r := &redaction{}
	for _, p := range patterns {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			r.patterns = append(r.patterns, p)
		}
	}
	return r
}

// on reports whether anything is redacted at all.
func (r *redaction) on() bool { return len(r.patterns) > 0 }

// key reports whether k is a redacted key.
func (r *redaction) key(k string) bool {
	k = strings.ToLower(k)
	for _, p := range r.patterns {
		if ok, _ := path.Match(p, k); ok {
			return true
		}
	}
	return false
}

// texts returns the replacer of the redacted values found in payloads, for the texts
// shown with them.
func (r *redaction) texts(payloads ...[]byte) *textRedactor {
	if !r.on() || r.payloadOnly {
		return &textRedactor{}
	}
	var values []string
	for _, p := range payloads {
		if v, ok := decodeJSON(p); ok {
			values = r.collect(v, false, values)
		}
	}
	return newTextRedactor(values)
}

// collect adds to values every scalar under a redacted key of v (all of them when
// under is set).
func (r *redaction) collect(v any, under bool, values []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			values = r.collect(val, under || r.key(k), values)
		}
	case []any:
		for _, val := range x {
			values = r.collect(val, under, values)
		}
	case string:
		if under {
			values = append(values, x)
		}
	case json.Number:
		if under {
			values = append(values, x.String())
		}
	}
	return values
}

// textRedactor replaces known values in text, ignoring case, as typed and as Go's %q
// or JSON would quote them.
type textRedactor struct {
	re *regexp.Regexp // nil: nothing to replace
}

func newTextRedactor(values []string) *textRedactor {
	var alts []string
	for _, v := range values {
		if len(v) < minRedactedValue {
			continue
		}
		alts = append(alts, regexp.QuoteMeta(v))
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			alts = append(alts, regexp.QuoteMeta(q[1:len(q)-1]))
		}
	}
	if len(alts) == 0 {
		return &textRedactor{}
	}
	// Longest first, so that a value holding another is replaced whole.
	slices.SortFunc(alts, func(a, b string) int { return len(b) - len(a) })
	return &textRedactor{re: regexp.MustCompile("(?i)" + strings.Join(slices.Compact(alts), "|"))}
}

func (t *textRedactor) text(s string) string {
	if t == nil || t.re == nil {
		return s
	}
	return t.re.ReplaceAllLiteralString(s, redacted)
}

// payload returns the payload indented, with redacted keys' values replaced at any
// depth and the values found under them replaced wherever else they appear. A
// payload that is not JSON is shown as text only if nothing is redacted; else it is
// withheld.
func (r *redaction) payload(payload []byte, t *textRedactor) string {
	v, ok := decodeJSON(payload)
	if !ok {
		if r.on() {
			return "(not JSON: withheld, since fields are redacted)"
		}
		return string(payload)
	}
	v = r.value(v)
	// Not JSON's \u003c escapes: html/template escapes the text for the page, and the
	// operator reads the characters the provider sent.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "(cannot format the payload)"
	}
	return t.text(strings.TrimSuffix(out.String(), "\n"))
}

func (r *redaction) value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if r.key(k) {
				x[k] = redacted
				continue
			}
			x[k] = r.value(val)
		}
	case []any:
		for i := range x {
			x[i] = r.value(x[i])
		}
	}
	return v
}

func decodeJSON(b []byte) (any, bool) {
	if len(b) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}
