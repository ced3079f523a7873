// Package console is hookinbox's operator console: server-rendered pages (html/template
// and embedded files, no JavaScript) that show the inbox and the outbox, let an
// operator retry, resolve or redeliver what failed and pause or resume an endpoint,
// every action written to the audit log.
//
// It is served by hookinbox serve under a path (/console by default) only when the
// configuration names its access tokens. Every page needs a session, taken by
// exchanging a token on a POST login for a random session cookie (HttpOnly,
// SameSite=Strict, Secure on TLS); a read-only token's session is shown no action and
// refused every request but GET. Cross-origin POSTs are refused
// (http.CrossOriginProtection), every answer carries a strict Content-Security-Policy
// and Cache-Control: no-store, every value is HTML-escaped by html/template, and what
// Config.Redact names is hidden from every text shown: payloads, errors, attempts,
// examples, request headers and audit notes.
//
//	h, err := console.New(exec, console.Config{Tokens: []console.Token{{Name: "alice", Secret: tok}}})
//	mux.Handle("/console/", h)
package console

import (
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

//go:embed templates/*.html static/*
var files embed.FS

// Token is one access token of the console.
type Token struct {
	// Name is who the token stands for; the audit log records it as the actor.
	Name string
	// Secret is the token itself, from the environment, never from a file.
	Secret string
	// ReadOnly sessions see every page but no action, and are refused every request
	// but GET.
	ReadOnly bool
}

// Endpoint is a configured endpoint, for the filters, exact event id lookups and the
// pause controls.
type Endpoint struct {
	Name     string
	Provider string
	// Sync marks an endpoint whose handler runs in the provider's request: a pause
	// holds back its outbox messages, not its processing.
	Sync bool
}

// Config configures the console.
type Config struct {
	// Path is where the console is served.
	//
	// Defaults to /console.
	Path string

	// Tokens are the accepted access tokens; at least one is required.
	Tokens []Token

	// Endpoints are the configured endpoints.
	Endpoints []Endpoint

	// Redact names payload fields whose values are never shown: patterns matched
	// against object keys at any depth, ignoring case, * standing for any run of
	// characters ("card_number", "*email*"). A matching key's value is replaced in the
	// payload, and every value found under one is replaced wherever the page shows it
	// beside that payload: errors, attempts, review examples, request headers, and the
	// notes and targets written to the audit log.
	Redact []string

	// SecureCookie marks the session cookie Secure even on plain HTTP, for a console
	// behind a proxy that terminates TLS. It is always Secure on a TLS connection.
	SecureCookie bool

	// SessionTTL is how long a session lasts after login.
	//
	// Defaults to 12 hours.
	SessionTTL time.Duration

	// MaxBulk caps the rows one bulk action changes.
	//
	// Defaults to 1000.
	MaxBulk int

	// LoginRate is how many login attempts one client address may make per minute,
	// failed or not; more are answered 429.
	//
	// Defaults to 10.
	LoginRate int

	// RetriedFunc, when set, is called after an action made receipts or outbox
	// messages available (a retry, a redelivery, a resume), to wake this process's
	// workers and dispatcher; other processes find them at their next poll.
	RetriedFunc func()

	// Logger receives one line per action (actor, action, target, rows), never a
	// payload or a token.
	//
	// Defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) withDefaults() {
	if c.Path == "" {
		c.Path = "/console"
	}
	c.Path = "/" + strings.Trim(c.Path, "/")
	if c.SessionTTL <= 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.MaxBulk <= 0 {
		c.MaxBulk = 1000
	}
	if c.LoginRate <= 0 {
		c.LoginRate = 10
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Console is the console's http.Handler.
type Console struct {
	cfg      Config
	exec     driver.Executor
	db       driver.ConsoleExecutor
	sessions *sessions
	logins   *loginLimiter
	pages    *pages
	redact   *redaction
	sealer   *sealer
	handler  http.Handler
	// broken names the protections a test turned off, to show that its test fails
	// without them (see export_test.go); always empty outside tests.
	broken map[string]bool
}

// New returns the console on exec.
func New(exec driver.Executor, cfg Config) (*Console, error) {
	cfg.withDefaults()
	var db driver.ConsoleExecutor = exec
	if len(cfg.Tokens) == 0 {
		return nil, errors.New("console: no access token configured")
	}
	for i, t := range cfg.Tokens {
		if t.Name == "" || strings.TrimSpace(t.Secret) == "" {
			return nil, fmt.Errorf("console: token %d has no name or an empty secret", i)
		}
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	for i, r := range cfg.Redact {
		if _, err := path.Match(strings.ToLower(r), ""); err != nil {
			return nil, fmt.Errorf("console: redact[%d] %q is not a pattern: %w", i, r, err)
		}
	}
	c := &Console{
		cfg: cfg, exec: exec, db: db, pages: p, redact: newRedaction(cfg.Redact), sealer: newSealer(),
		sessions: newSessions(cfg.SessionTTL),
		logins:   newLoginLimiter(cfg.LoginRate),
	}
	c.handler = c.routes()
	return c, nil
}

// Path is where the console is served, without a trailing slash.
func (c *Console) Path() string { return c.cfg.Path }

func (c *Console) routes() http.Handler {
	p := c.cfg.Path
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+p+"/login", c.loginPage)
	mux.HandleFunc("POST "+p+"/login", c.login)
	mux.HandleFunc("GET "+p+"/static/console.css", serveCSS)

	auth := http.NewServeMux()
	auth.HandleFunc("GET "+p+"/{$}", c.overview)
	auth.HandleFunc("GET "+p+"/logout", c.logout)
	auth.HandleFunc("GET "+p+"/review", c.review)
	auth.HandleFunc("GET "+p+"/events", c.events)
	auth.HandleFunc("GET "+p+"/event", c.event)
	auth.HandleFunc("GET "+p+"/outbox", c.outbox)
	auth.HandleFunc("GET "+p+"/outbox/message", c.message)
	auth.HandleFunc("GET "+p+"/audit", c.audit)
	auth.HandleFunc("GET "+p+"/confirm", c.confirm)
	auth.HandleFunc("GET "+p+"/outbox/confirm", c.confirmOutbox)
	auth.HandleFunc("POST "+p+"/event/retry", c.retryEvent)
	auth.HandleFunc("POST "+p+"/event/resolve", c.resolveEvent)
	auth.HandleFunc("POST "+p+"/outbox/retry", c.retryMessage)
	auth.HandleFunc("POST "+p+"/outbox/resolve", c.resolveMessage)
	auth.HandleFunc("POST "+p+"/outbox/redeliver", c.redeliverMessage)
	auth.HandleFunc("POST "+p+"/bulk", c.bulk)
	auth.HandleFunc("POST "+p+"/outbox/bulk", c.bulkOutbox)
	auth.HandleFunc("POST "+p+"/endpoint/pause", c.pauseEndpoint)
	auth.HandleFunc("POST "+p+"/endpoint/resume", c.resumeEndpoint)
	auth.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		c.problem(w, r, http.StatusNotFound, "There is no such page in the console.")
	})
	mux.Handle(p+"/", c.requireSession(c.checkQuery(auth)))
	mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p+"/", http.StatusSeeOther)
	})

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.problem(w, r, http.StatusForbidden, "Cross-origin request refused: actions are taken from the console's own pages.")
	}))
	if c.broken["cross-origin"] {
		return secureHeaders(mux)
	}
	return secureHeaders(cop.Handler(mux))
}

// checkQuery answers 400 to a query no page of the console sends (bytes that are not
// UTF-8, a NUL, a broken escape), before any handler passes it to the database.
func (c *Console) checkQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err == nil {
			err = checkText(q)
		}
		if err != nil {
			c.problem(w, r, http.StatusBadRequest, "The address is not one the console makes: "+err.Error()+".")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// secureHeaders sets what every answer carries: nothing loads from elsewhere, nothing
// frames the console, nothing is cached, nothing is sniffed.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
