package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/driver"
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
	// available is when a row may be taken next, or "paused" for a row parked behind
	// its paused endpoint.
	"available": func(t time.Time) string {
		if !t.Before(driver.ParkedAt) {
			return "when its endpoint is resumed"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"dur": func(d time.Duration) string {
		if d <= 0 {
			return "—"
		}
		return d.Round(time.Second).String()
	},
	"ms":   func(a, b time.Time) string { return fmt.Sprintf("%.1f ms", float64(b.Sub(a).Microseconds())/1000) },
	"hex":  func(b []byte) string { return fmt.Sprintf("%x", b) },
	"dest": func(d string) string { return destinationParam(d) },
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
	// Refresh is the page's auto-refresh period in seconds (0: off); RefreshURLs
	// turn it off, to 10 s and to 60 s, on pages that offer it.
	Refresh     int
	RefreshURLs []refreshLink
	Data        any
}

type refreshLink struct {
	Label string
	URL   string
	On    bool
}

// refreshable are the pages that offer auto-refresh: the ones an operator watches.
var refreshable = map[string]bool{"overview": true, "review": true, "events": true, "outbox": true, "audit": true}

// render writes page with data, buffered so that a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	v := &view{Prefix: c.cfg.Path, Page: page, Data: data}
	if se := sessionFrom(r.Context()); se != nil {
		v.User, v.ReadOnly = se.name, se.readOnly
	}
	if refreshable[page] && status == http.StatusOK {
		v.Refresh, v.RefreshURLs = refreshLinks(r.URL)
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

// refreshLinks reads the page's refresh parameter (at least 5 s) and builds the
// links that change it.
func refreshLinks(u *url.URL) (int, []refreshLink) {
	q := u.Query()
	period, _ := strconv.Atoi(q.Get("refresh"))
	if period > 0 {
		period = max(period, 5)
	}
	var links []refreshLink
	for _, p := range []int{0, 10, 60} {
		nq := u.Query()
		label := "off"
		if p == 0 {
			nq.Del("refresh")
		} else {
			nq.Set("refresh", strconv.Itoa(p))
			label = strconv.Itoa(p) + " s"
		}
		links = append(links, refreshLink{Label: label, URL: u.Path + "?" + nq.Encode(), On: p == period})
	}
	return period, links
}

// problemData is an error page: what went wrong, and where to go back to.
type problemData struct {
	Status  int
	Title   string
	Message string
	BackURL string
	Back    string
}

// problem answers an error as a page of the console's own, with the layout and a way
// back: the list the request came from, or the overview.
func (c *Console) problem(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d := &problemData{Status: status, Title: http.StatusText(status), Message: msg, BackURL: c.cfg.Path + "/", Back: "the overview"}
	rest := strings.TrimPrefix(r.URL.Path, c.cfg.Path)
	for _, s := range []struct{ prefix, page, name string }{
		{"/outbox", "/outbox", "the outbox"}, {"/event", "/events", "the inbox"}, {"/review", "/review", "needs review"},
		{"/audit", "/audit", "the audit log"}, {"/confirm", "/review", "needs review"}, {"/bulk", "/review", "needs review"},
	} {
		if strings.HasPrefix(rest, s.prefix) {
			d.BackURL, d.Back = c.cfg.Path+s.page, s.name
			break
		}
	}
	c.render(w, r, status, "error", d)
}

// fail answers a database error without its details (they are logged).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.cfg.Logger.Error("hookinbox console: "+what, "error", err.Error())
	c.problem(w, r, http.StatusServiceUnavailable, what+": the database did not answer; try again")
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

// eventURL is the page of one receipt.
func (c *Console) eventURL(k hookinboxtype.Key) string {
	q := url.Values{"provider": {k.Provider}, "endpoint": {k.Endpoint}, "id": {k.EventID}}
	return c.cfg.Path + "/event?" + q.Encode()
}

func (c *Console) messageURL(id int64) string {
	return c.cfg.Path + "/outbox/message?id=" + strconv.FormatInt(id, 10)
}
