package provider

import (
	"fmt"
	"sort"
	"time"
)

// Options are what New needs to build any verifier. Secrets are values, never names of
// where they came from.
type Options struct {
	// Secrets are the endpoint's signing secrets, several during a rotation.
	Secrets []string
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
}

// New builds the verifier of the named provider, as selected by `provider:` in config.
func New(name string, o Options) (Verifier, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("unknown provider %q (known: %v)", name, Names())
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

func noParams(provider string, params map[string]string) error {
	for k := range params {
		return fmt.Errorf("provider %s takes no option %q", provider, k)
	}
	return nil
}
