package config

import (
	"fmt"
	"net"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultConsolePath is where the operator console is served unless console.path says
// otherwise.
const DefaultConsolePath = "/console"

// minConsoleToken is the shortest console token accepted: the login is rate-limited,
// but a short token is still guessed.
const minConsoleToken = 16

// Console configures the operator console (the console block). Nil when the block
// names no tokens: the console is off.
type Console struct {
	// Path is where it is served.
	//
	// Defaults to /console.
	Path string
	// Listen is its own listener's address (host:port), to keep it on an internal
	// interface; empty serves it on the main listener.
	Listen string
	// Tokens are its access tokens.
	Tokens []ConsoleToken
	// Redact names payload fields whose values the console never shows.
	Redact []string
	// SecureCookie marks the session cookie Secure on plain HTTP too, for a console
	// behind a TLS-terminating proxy.
	SecureCookie bool
}

// ConsoleToken is one access token: who it stands for, where it is read from, and
// whether it may act.
type ConsoleToken struct {
	Name string
	// Source says where the token came from ("env HOOKINBOX_CONSOLE_TOKEN"); it never
	// holds the token.
	Source   string
	ReadOnly bool
	// Secret is the token, read from the environment when Load resolves secrets;
	// empty otherwise.
	Secret string
}

type fileConsole struct {
	Path         string             `yaml:"path"`
	Listen       string             `yaml:"listen"`
	Tokens       []fileConsoleToken `yaml:"tokens"`
	Redact       stringList         `yaml:"redact"`
	SecureCookie bool               `yaml:"secure_cookie"`
}

type fileConsoleToken struct {
	Name     string `yaml:"name"`
	TokenEnv string `yaml:"token_env"`
	ReadOnly bool   `yaml:"read_only"`
	// Token is accepted only to refuse an inline token with a message that says what to
	// do instead.
	Token yaml.Node `yaml:"token"`
}

// console validates the console block: nil, nil when it names no tokens.
func (v *validator) console(fc *fileConsole, listen string) (*Console, error) {
	if len(fc.Tokens) == 0 {
		if fc.Path != "" || fc.Listen != "" || len(fc.Redact) > 0 {
			return nil, v.keyError("console.tokens", "required: the console is off until it names its access tokens (token_env)")
		}
		return nil, nil
	}
	c := &Console{Path: fc.Path, Listen: fc.Listen, Redact: fc.Redact, SecureCookie: fc.SecureCookie}
	if c.Path == "" {
		c.Path = DefaultConsolePath
	}
	if err := checkPath(c.Path); err != nil {
		return nil, v.keyError("console.path", "%v", err)
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return nil, v.keyError("console.listen", "%q is not a host:port address", c.Listen)
		}
		if c.Listen == listen {
			return nil, v.keyError("console.listen", "%q is the main listener: leave console.listen out to serve the console there", c.Listen)
		}
	}
	for i, r := range c.Redact {
		if strings.TrimSpace(r) == "" {
			return nil, v.keyError(fmt.Sprintf("console.redact[%d]", i), "empty field name")
		}
	}
	names := map[string]int{}
	for i, ft := range fc.Tokens {
		key := fmt.Sprintf("console.tokens[%d]", i)
		if !ft.Token.IsZero() {
			return nil, v.keyError(key+".token", "tokens are never written in the config: put it in an environment variable and name it in token_env")
		}
		if ft.Name == "" {
			return nil, v.keyError(key+".name", "required: who the token stands for (the audit log's actor)")
		}
		if j, dup := names[ft.Name]; dup {
			return nil, v.keyError(key+".name", "duplicate name %q (also console.tokens[%d])", ft.Name, j)
		}
		names[ft.Name] = i
		if ft.TokenEnv == "" {
			return nil, v.keyError(key+".token_env", "required: the environment variable that holds the token")
		}
		t := ConsoleToken{Name: ft.Name, Source: "env " + ft.TokenEnv, ReadOnly: ft.ReadOnly}
		if v.opts.ResolveSecrets {
			s, _ := v.opts.LookupEnv(ft.TokenEnv)
			if err := checkSecret(s); err != nil {
				return nil, v.keyError(key+".token_env", "environment variable %s %v", ft.TokenEnv, err)
			}
			if len(s) < minConsoleToken {
				return nil, v.keyError(key+".token_env", "environment variable %s holds fewer than %d characters", ft.TokenEnv, minConsoleToken)
			}
			t.Secret = s
		}
		c.Tokens = append(c.Tokens, t)
	}
	return c, nil
}
