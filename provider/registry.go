package provider

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Options are what New needs to build any verifier. Secrets are values, never names of
// where they came from.
type Options struct {
	// Secrets are the endpoint's signing secrets, several during a rotation. Schemes
	// signed with the provider's private key (discord, sendgrid) take PublicKeys
	// instead, and refuse secrets.
	Secrets []string
	// PublicKeys are the provider's public keys, for the schemes signed with its
	// private key (discord, sendgrid); several during a rotation. The other schemes
	// refuse them.
	PublicKeys []string
	// Tolerance bounds the signing timestamp's distance from now, for schemes that
	// sign one. Zero means DefaultTolerance; negative is an error.
	Tolerance time.Duration
	// Params are scheme-specific settings (e.g. the generic hmac scheme's header and
	// algorithm), keyed by their config names. A scheme refuses keys it does not know.
	Params map[string]string
	// NowFunc returns the current time. Nil means time.Now.
	NowFunc func() time.Time
}

// constructors maps each provider name to its constructor.
var constructors = map[string]func(Options) (Verifier, error){
	"stripe": func(o Options) (Verifier, error) {
		if err := noParams("stripe", o.Params); err != nil {
			return nil, err
		}
		return NewStripe(StripeConfig{Secrets: o.Secrets, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"github": func(o Options) (Verifier, error) {
		if err := noParams("github", o.Params); err != nil {
			return nil, err
		}
		return NewGitHub(GitHubConfig{Secrets: o.Secrets})
	},
	"shopify": func(o Options) (Verifier, error) {
		if err := noParams("shopify", o.Params); err != nil {
			return nil, err
		}
		return NewShopify(ShopifyConfig{Secrets: o.Secrets})
	},
	"slack": func(o Options) (Verifier, error) {
		if err := noParams("slack", o.Params); err != nil {
			return nil, err
		}
		return NewSlack(SlackConfig{Secrets: o.Secrets, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"standardwebhooks": newStandardWebhooks("standardwebhooks"),
	"svix":             newStandardWebhooks("svix"),
	"discord": func(o Options) (Verifier, error) {
		if err := noParams("discord", o.Params); err != nil {
			return nil, err
		}
		return NewDiscord(DiscordConfig{PublicKeys: o.PublicKeys, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"sendgrid": func(o Options) (Verifier, error) {
		if err := noParams("sendgrid", o.Params); err != nil {
			return nil, err
		}
		return NewSendGrid(SendGridConfig{PublicKeys: o.PublicKeys, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"twilio": func(o Options) (Verifier, error) {
		if err := knownParams("twilio", o.Params, "public_url"); err != nil {
			return nil, err
		}
		return NewTwilio(TwilioConfig{Secrets: o.Secrets, PublicURL: o.Params["public_url"]})
	},
	"square": func(o Options) (Verifier, error) {
		if err := knownParams("square", o.Params, "public_url"); err != nil {
			return nil, err
		}
		return NewSquare(SquareConfig{Secrets: o.Secrets, PublicURL: o.Params["public_url"]})
	},
	"paddle": func(o Options) (Verifier, error) {
		if err := noParams("paddle", o.Params); err != nil {
			return nil, err
		}
		return NewPaddle(PaddleConfig{Secrets: o.Secrets, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"linear": func(o Options) (Verifier, error) {
		if err := noParams("linear", o.Params); err != nil {
			return nil, err
		}
		return NewLinear(LinearConfig{Secrets: o.Secrets, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"zoom": func(o Options) (Verifier, error) {
		if err := noParams("zoom", o.Params); err != nil {
			return nil, err
		}
		return NewZoom(ZoomConfig{Secrets: o.Secrets, Tolerance: o.Tolerance, NowFunc: o.NowFunc})
	},
	"gitlab": func(o Options) (Verifier, error) {
		if err := noParams("gitlab", o.Params); err != nil {
			return nil, err
		}
		return NewGitLab(GitLabConfig{Secrets: o.Secrets})
	},
	"hmac": func(o Options) (Verifier, error) {
		if err := knownParams("hmac", o.Params, hmacParams...); err != nil {
			return nil, err
		}
		retryWindow, err := durationParam("hmac", o.Params, "retry_window")
		if err != nil {
			return nil, err
		}
		p := o.Params
		return NewHMAC(HMACConfig{
			Secrets:         o.Secrets,
			Header:          p["header"],
			Prefix:          p["prefix"],
			Algorithm:       p["algorithm"],
			Encoding:        p["encoding"],
			TimestampHeader: p["timestamp_header"],
			SignedPayload:   p["signed_payload"],
			IDHeader:        p["id_header"],
			IDField:         p["id_field"],
			TypeHeader:      p["type_header"],
			TypeField:       p["type_field"],
			Tolerance:       o.Tolerance,
			RetryWindow:     retryWindow,
			NowFunc:         o.NowFunc,
		})
	},
}

// newStandardWebhooks returns the constructor of the Standard Webhooks verifier
// selected by name ("standardwebhooks" or its alias "svix"), which its param errors
// quote as written in the config.
func newStandardWebhooks(name string) func(Options) (Verifier, error) {
	return func(o Options) (Verifier, error) {
		if err := knownParams(name, o.Params, "retry_window"); err != nil {
			return nil, err
		}
		retryWindow, err := durationParam(name, o.Params, "retry_window")
		if err != nil {
			return nil, err
		}
		return NewStandardWebhooks(StandardWebhooksConfig{
			Secrets: o.Secrets, Tolerance: o.Tolerance, RetryWindow: retryWindow, NowFunc: o.NowFunc,
		})
	}
}

// hmacParams are the params of the generic hmac scheme, each documented on the
// HMACConfig field it sets.
var hmacParams = []string{
	"header", "prefix", "algorithm", "encoding", "timestamp_header", "signed_payload",
	"id_header", "id_field", "type_header", "type_field", "retry_window",
}

// New builds the verifier of the named provider, as selected by `provider:` in config:
//
//	stripe            NewStripe; no params
//	github            NewGitHub; no params; Tolerance unused (no timestamp)
//	shopify           NewShopify; no params; Tolerance unused (no signed timestamp)
//	slack             NewSlack; no params
//	standardwebhooks  NewStandardWebhooks; param retry_window; webhook-* or svix-* headers
//	svix              the same verifier as standardwebhooks, under the name Svix's
//	                  users know it by; Name() is "standardwebhooks" (see below)
//	hmac              NewHMAC; params header, prefix, algorithm, encoding,
//	                  timestamp_header, signed_payload, id_header, id_field,
//	                  type_header, type_field, retry_window (see HMACConfig)
//	discord           NewDiscord; PublicKeys, no secrets; no params
//	sendgrid          NewSendGrid; PublicKeys, no secrets; no params
//	twilio            NewTwilio; param public_url; Tolerance unused (no timestamp)
//	square            NewSquare; param public_url; Tolerance unused (no timestamp)
//	paddle            NewPaddle; no params
//	linear            NewLinear; no params
//	zoom              NewZoom; no params
//	gitlab            NewGitLab; no params; Tolerance unused (no timestamp)
//
// svix is an alias, not a provider of its own: Svix sends the Standard Webhooks
// scheme (under svix-* header names, which the verifier reads as well), so both
// names build the same verifier, and its Name() is "standardwebhooks" for both.
// That name is stored with every receipt and is part of its key (provider,
// endpoint, event_id), so an endpoint's receipts do not depend on which of the two
// names its config uses: changing one for the other leaves the keys as they were,
// and a retry that arrives after the change is still a duplicate rather than a new
// event processed a second time. Receipts of a svix endpoint are listed, shown and
// retried under provider standardwebhooks.
//
// discord and sendgrid are verified with the provider's public keys (o.PublicKeys)
// and refuse secrets; every other scheme refuses public keys.
//
// An unknown name, an unknown param key and a bad param value are errors that name
// them; secrets never appear in errors.
func New(name string, o Options) (Verifier, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("unknown provider %q (known: %v)", name, Names())
	}
	switch {
	case TakesPublicKeys(name) && len(o.Secrets) > 0:
		return nil, fmt.Errorf("provider %s is verified with public keys and takes no secret", name)
	case !TakesPublicKeys(name) && len(o.PublicKeys) > 0:
		return nil, fmt.Errorf("provider %s is verified with secrets and takes no public key", name)
	}
	return c(o)
}

// Names lists the providers New knows, sorted.
func Names() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// publicKeysPlaceholders hold, for each scheme that takes public keys instead of
// secrets, a key its constructor accepts: the schemes listed by TakesPublicKeys.
var publicKeyPlaceholders = map[string]string{
	// 32 bytes that are not the encoding of a curve point (y is not below the
	// field's prime), so that no signature verifies under it, should a
	// placeholder ever be asked to verify.
	"discord": "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	// SendGrid's example verification key from its Go library's tests, whose
	// private key is not published.
	"sendgrid": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==",
}

// TakesPublicKeys reports whether the named provider's scheme is signed with the
// provider's private key, so that an endpoint configures its public keys
// (Options.PublicKeys) and no secret.
func TakesPublicKeys(name string) bool {
	_, ok := publicKeyPlaceholders[name]
	return ok
}

// PlaceholderPublicKey returns a public key that the named provider's constructor
// accepts, for building a verifier whose real keys are not read (operator commands
// need only its Name and RetryWindow), and false for a provider that takes secrets.
func PlaceholderPublicKey(name string) (string, bool) {
	key, ok := publicKeyPlaceholders[name]
	return key, ok
}

func noParams(provider string, params map[string]string) error {
	for k := range params {
		return fmt.Errorf("provider %s takes no option %q", provider, k)
	}
	return nil
}

// knownParams refuses a key of params that is not among known, naming the first such
// key in sorted order. A misspelt key would otherwise leave its setting at the
// default without a word.
func knownParams(provider string, params map[string]string, known ...string) error {
	var unknown []string
	for k := range params {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("provider %s takes no option %q (known: %v)", provider, unknown[0], known)
	}
	return nil
}

// durationParam parses params[key] as a Go duration; absent or empty is zero.
func durationParam(provider string, params map[string]string, key string) (time.Duration, error) {
	value := params[key]
	if value == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("provider %s: option %s %q is not a duration such as \"24h\"", provider, key, value)
	}
	return d, nil
}
