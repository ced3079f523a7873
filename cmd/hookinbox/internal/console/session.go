package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// cookieName is the session cookie. Its value is a random session id, never the token.
const cookieName = "hookinbox_console"

// session is a logged-in operator.
type session struct {
	name     string
	readOnly bool
	expires  time.Time
}

// sessions are kept in memory: a restart logs everyone out, and behind a load
// balancer a session belongs to the replica that issued it.
type sessions struct {
	mu   sync.Mutex
	ttl  time.Duration
	byID map[string]*session
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, byID: map[string]*session{}}
}

// create starts a session and returns its id: 32 random bytes.
func (s *sessions) create(name string, readOnly bool) string {
	id := rand.Text() + rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, v := range s.byID {
		if now.After(v.expires) {
			delete(s.byID, k)
		}
	}
	s.byID[id] = &session{name: name, readOnly: readOnly, expires: now.Add(s.ttl)}
	return id
}

func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.byID[id]
	if se == nil || time.Now().After(se.expires) {
		delete(s.byID, id)
		return nil
	}
	return se
}

func (s *sessions) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// matchToken returns the token that secret is, comparing with every configured token
// in constant time (over their SHA-256, so lengths do not show either).
func matchToken(tokens []Token, secret string) *Token {
	given := sha256.Sum256([]byte(secret))
	var found *Token
	for i := range tokens {
		want := sha256.Sum256([]byte(tokens[i].Secret))
		if subtle.ConstantTimeCompare(given[:], want[:]) == 1 && found == nil {
			found = &tokens[i]
		}
	}
	return found
}

// loginLimiter bounds login attempts per client address.
type loginLimiter struct {
	mu     sync.Mutex
	perMin int
	byAddr map[string]*rate.Limiter
}

func newLoginLimiter(perMin int) *loginLimiter {
	return &loginLimiter{perMin: perMin, byAddr: map[string]*rate.Limiter{}}
}

// maxLimiters bounds the limiter's memory: past it, the table starts over.
const maxLimiters = 10000

func (l *loginLimiter) allow(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.byAddr[host]
	if lim == nil {
		if len(l.byAddr) >= maxLimiters {
			l.byAddr = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(l.perMin)), l.perMin)
		l.byAddr[host] = lim
	}
	return lim.Allow()
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// requireSession answers 401 (the login page) without a valid session, and 403 to a
// read-only session's every request but GET.
func (c *Console) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var se *session
		if ck, err := r.Cookie(cookieName); err == nil {
			se = c.sessions.get(ck.Value)
		}
		if se == nil {
			if r.Method == http.MethodGet {
				c.render(w, r, http.StatusUnauthorized, "login", &loginData{})
				return
			}
			c.problem(w, r, http.StatusUnauthorized, "No session: log in first.")
			return
		}
		if se.readOnly && r.Method != http.MethodGet && !c.broken["read-only"] {
			c.problem(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, se)), http.StatusForbidden,
				"Read-only session: actions are refused.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, se)))
	})
}

type loginData struct {
	Error string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", &loginData{})
}

// login exchanges a token for a session cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.logins.allow(r) {
		w.Header().Set("Retry-After", "60")
		c.render(w, r, http.StatusTooManyRequests, "login", &loginData{Error: "Too many login attempts; wait a minute."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	tok := matchToken(c.cfg.Tokens, r.PostFormValue("token"))
	if tok == nil {
		c.cfg.Logger.Warn("hookinbox console: failed login", "remote", r.RemoteAddr)
		c.render(w, r, http.StatusUnauthorized, "login", &loginData{Error: "Unknown token."})
		return
	}
	id := c.sessions.create(tok.Name, tok.ReadOnly)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: c.cfg.Path + "/",
		MaxAge: int(c.cfg.SessionTTL.Seconds()), HttpOnly: true,
		Secure: r.TLS != nil || c.cfg.SecureCookie, SameSite: http.SameSiteStrictMode,
	})
	c.cfg.Logger.Info("hookinbox console: login", "actor", tok.Name, "read_only", tok.ReadOnly)
	http.Redirect(w, r, c.cfg.Path+"/", http.StatusSeeOther)
}

// logout ends the session. A GET, so that a read-only session has no form at all; the
// cookie is SameSite=Strict, so another site cannot log anyone out.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(cookieName); err == nil {
		c.sessions.delete(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: c.cfg.Path + "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil || c.cfg.SecureCookie, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, c.cfg.Path+"/login", http.StatusSeeOther)
}
