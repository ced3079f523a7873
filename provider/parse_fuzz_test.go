package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseTimestampHeader checks the timestamp parser shared by every scheme that
// signs a time against strconv: only ASCII digits are accepted, at most 19 of them,
// and the time is the number they spell; anything else is a malformed signature.
func FuzzParseTimestampHeader(f *testing.F) {
	for _, seed := range []string{
		"1700000000", "0", "", "+1700000000", "-1", " 1700000000", "1700000000 ", "1.7e9",
		"9223372036854775807", "9223372036854775808", "00000000000000000001", "１７００", "0x10", "§1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, err := parseTimestampHeader("fuzz", "X-Timestamp", value)
		digits := value != "" && len(value) <= maxTimestampLen && strings.Trim(value, "0123456789") == ""
		n, perr := strconv.ParseInt(value, 10, 64)
		switch {
		case err != nil:
			if !errors.Is(err, ErrMalformedSignature) {
				t.Fatalf("error %v is not ErrMalformedSignature", err)
			}
			if digits && perr == nil {
				t.Fatalf("%q refused: %v", value, err)
			}
			if strings.Contains(value, "§") && strings.Contains(err.Error(), value) {
				t.Fatalf("error %q quotes the header", err)
			}
		case !digits || perr != nil || got.Unix() != n:
			t.Fatalf("%q accepted as %d", value, got.Unix())
		}
	})
}

// FuzzEventString checks the dot-path reader of JSON events (ids and types of
// Stripe, Slack, Standard Webhooks and the hmac scheme's id_field and type_field)
// against encoding/json: what it returns is a non-empty string, or a number's
// literal, found by walking the path one object at a time.
func FuzzEventString(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","type":"invoice.paid"}`), "id", false)
	f.Add([]byte(`{"event":{"id":"Ev1","type":"message"}}`), "event.type", false)
	f.Add([]byte(`{"data":{"object":{"id":820982911946154508}}}`), "data.object.id", true)
	f.Add([]byte(`{"id":-1.5e3}`), "id", true)
	f.Add([]byte(`{"id":""}`), "id", false)
	f.Add([]byte(`{"id":null}`), "id", false)
	f.Add([]byte(`{"a.b":"flat"}`), "a.b", false)
	f.Add([]byte(`{"a":[{"b":"x"}]}`), "a.b", false)
	f.Add([]byte(`{"id":"a","id":"b"}`), "id", false)
	f.Add([]byte(`[]`), "id", false)
	f.Fuzz(func(t *testing.T, body []byte, path string, numbers bool) {
		if !validFieldPath(path) {
			return
		}
		fields, err := eventObject("fuzz", body)
		if err != nil {
			if !errors.Is(err, ErrUnparsableEvent) {
				t.Fatalf("eventObject error %v", err)
			}
			return
		}
		got, err := eventString("fuzz", fields, path, numbers)
		if err != nil {
			if !errors.Is(err, ErrUnparsableEvent) {
				t.Fatalf("eventString error %v", err)
			}
			return
		}
		// An independent walk with encoding/json's generic values.
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		for _, key := range strings.Split(path, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("path %q walks through a non-object, yet %q was found", path, got)
			}
			v = obj[key]
		}
		switch val := v.(type) {
		case string:
			if val != got || got == "" {
				t.Fatalf("%s = %q, encoding/json reads %q", path, got, val)
			}
		case json.Number:
			if !numbers || got != val.String() {
				t.Fatalf("%s = %q (numbers %v), encoding/json reads the number %s", path, got, numbers, val)
			}
		default:
			t.Fatalf("%s = %q, encoding/json reads %T", path, got, v)
		}
	})
}

// FuzzHeaderValue checks that a header is read only when it is sent exactly once,
// within maxHeaderLen, and that a refusal never quotes it.
func FuzzHeaderValue(f *testing.F) {
	f.Add("t=1,v1=abc", "", false)
	f.Add("a", "b", true)
	f.Add(strings.Repeat("x", maxHeaderLen+1), "", false)
	f.Add("", "", true)
	f.Add("§"+strings.Repeat("y", maxHeaderLen), "", false)
	f.Fuzz(func(t *testing.T, first, second string, twice bool) {
		h := http.Header{}
		h["X-Sig"] = []string{first}
		if twice {
			h["X-Sig"] = append(h["X-Sig"], second)
		}
		got, err := headerValue(h, "fuzz", "X-Sig", ErrMalformedSignature)
		switch {
		case err != nil:
			if !errors.Is(err, ErrMalformedSignature) || !twice && len(first) <= maxHeaderLen {
				t.Fatalf("refused %q with %v", first, err)
			}
			if strings.Contains(first, "§") && strings.Contains(err.Error(), first) {
				t.Fatalf("error %q quotes the header", err)
			}
		case twice || len(first) > maxHeaderLen || got != first:
			t.Fatalf("headerValue = %q for %q (twice %v)", got, first, twice)
		}
	})
}

// FuzzObjectMembers holds objectMembers, which reads every event's top level, to
// json.Unmarshal into a map[string]json.RawMessage: the same verdict on every input,
// and for an object the same names with the same values.
func FuzzObjectMembers(f *testing.F) {
	for _, seed := range []string{
		`{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1","lines":[1,2,{"a":"}"}]}}}`,
		`{}`, ` { "a" : 1 , "b" : [ ] , "c" : { } } `, `{"a":"x","a":"y"}`, `{"\u0069d":"escaped name"}`,
		`{"a\"b":"\\\"","c":"\u00e9"}`, "{\"caf\xc3\xa9\":1,\"bad\xff\":2}", `{"n":-1.5e+3,"t":true,"f":false,"z":null}`,
		`[]`, `null`, `"s"`, `1`, `{"a":1,}`, `{"a":1}x`, `{"a":1} `, `{"a":"unterminated}`, ``, ` `,
		`{"a":[[[[{"b":"]"}]]]],"c":"{"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var want map[string]json.RawMessage
		wantOK := json.Unmarshal(doc, &want) == nil && want != nil
		got, ok := objectMembers(doc)
		if ok != wantOK {
			t.Fatalf("objectMembers(%q) ok %v, json.Unmarshal ok %v", doc, ok, wantOK)
		}
		if len(got) != len(want) {
			t.Fatalf("objectMembers(%q): %d members, json.Unmarshal %d", doc, len(got), len(want))
		}
		for name, v := range want {
			if g, found := got[name]; !found || !bytes.Equal(g, v) {
				t.Fatalf("objectMembers(%q)[%q] = %q (found %v), json.Unmarshal %q", doc, name, g, found, v)
			}
		}
		for name, v := range got {
			if cap(v) != len(v) {
				t.Fatalf("objectMembers(%q)[%q] has room to append into the document", doc, name)
			}
		}
	})
}
