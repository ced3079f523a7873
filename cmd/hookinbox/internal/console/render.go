package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// pages are the parsed templates: each page is layout.html with its own file.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"ago":  func(t time.Time) string { return since(t) },
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"timep": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"dur": func(d time.Duration) string {
		if d <= 0 {
			return "—"
		}
		return d.Round(time.Second).String()
	},
	"ms":  func(a, b time.Time) string { return fmt.Sprintf("%.1f ms", float64(b.Sub(a).Microseconds())/1000) },
	"hex": func(b []byte) string { return fmt.Sprintf("%x", b) },
}

func parsePages() (*pages, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: error parsing %s: %w", n, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what every page's layout reads.
type view struct {
	Prefix   string
	Page     string
	User     string
	ReadOnly bool
	Data     any
}

// render writes page with data, buffered so that a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	v := &view{Prefix: c.cfg.Path, Page: page, Data: data}
	if se := sessionFrom(r.Context()); se != nil {
		v.User, v.ReadOnly = se.name, se.readOnly
	}
	var buf bytes.Buffer
	t := c.pages.byName[page]
	if t == nil {
		http.Error(w, "no such page", http.StatusInternalServerError)
		return
	}
	if err := t.Execute(&buf, v); err != nil {
		c.cfg.Logger.Error("hookinbox console: error rendering page", "page", page, "error", err.Error())
		http.Error(w, "error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers a database error without its details (they are logged).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.cfg.Logger.Error("hookinbox console: "+what, "error", err.Error())
	http.Error(w, what, http.StatusServiceUnavailable)
}

func serveCSS(w http.ResponseWriter, r *http.Request) {
	b, err := files.ReadFile("static/console.css")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(b)
}

func since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

// redacted is what a redacted field's value becomes.
const redacted = "[redacted]"

// prettyPayload returns the payload indented, with the fields named in redact
// replaced at any depth. A payload that is not JSON is shown as text only if it has
// nothing to redact; else it is withheld.
func prettyPayload(payload []byte, redact []string) string {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if len(redact) > 0 {
			return "(not JSON: withheld, since fields are redacted)"
		}
		return string(payload)
	}
	v = redactValue(v, redact)
	// Not JSON's \u003c escapes: html/template escapes the text for the page, and the
	// operator reads the characters the provider sent.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "(cannot format the payload)"
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func redactValue(v any, redact []string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if isRedacted(k, redact) {
				x[k] = redacted
				continue
			}
			x[k] = redactValue(val, redact)
		}
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], redact)
		}
	}
	return v
}

func isRedacted(key string, redact []string) bool {
	for _, r := range redact {
		if strings.EqualFold(key, r) {
			return true
		}
	}
	return false
}

// eventURL is the page of one receipt.
func (c *Console) eventURL(k hookinboxtype.Key) string {
	q := url.Values{"provider": {k.Provider}, "endpoint": {k.Endpoint}, "id": {k.EventID}}
	return c.cfg.Path + "/event?" + q.Encode()
}
