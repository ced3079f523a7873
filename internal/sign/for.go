package sign

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// signerParams are the params each scheme's signer accepts: those of the provider of
// the same name, so that an endpoint's configuration can be passed as it is. Params
// that only concern the receiver (retry_window, id_field, type_field) are accepted and
// ignored.
var signerParams = map[string][]string{
	"stripe":           nil,
	"github":           nil,
	"shopify":          nil,
	"slack":            nil,
	"standardwebhooks": {"retry_window"},
	"svix":             {"retry_window"},
	"hmac": {
		"header", "prefix", "algorithm", "encoding", "timestamp_header", "signed_payload",
		"id_header", "id_field", "type_header", "type_field", "retry_window",
	},
	"discord":  nil,
	"sendgrid": nil,
	"twilio":   {"public_url"},
	"square":   {"public_url"},
	"paddle":   nil,
	"linear":   nil,
	"zoom":     nil,
	"gitlab":   nil,
}

// Names lists the providers For knows, sorted: the names a config's provider key
// accepts (provider.Names), so that `hookinbox send` can sign for every endpoint.
func Names() []string {
	names := make([]string, 0, len(signerParams))
	for n := range signerParams {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// For returns the signer of the named provider, as `hookinbox send --provider`
// selects it: stripe, github, shopify, slack, standardwebhooks, svix (Standard
// Webhooks under svix-* headers), hmac, discord, sendgrid, twilio, square, paddle,
// linear, zoom or gitlab, with the endpoint's secrets and params.
//
// For discord and sendgrid, which the provider signs with its private key, the
// secrets are private keys: discord's in hex (ParseDiscordKey), sendgrid's in
// base64 DER (ParseSendGridKey). twilio and square sign for the param public_url
// when it is set.
//
// Schemes that carry several signatures (stripe, standardwebhooks, svix, paddle)
// sign with every secret; the others sign with the first. It refuses no secrets, an empty or
// blank secret, an unknown param key and, for hmac, a scheme HMAC refuses. Errors
// never contain a secret.
func For(provider string, secrets []string, params map[string]string) (Signer, error) {
	known, ok := signerParams[provider]
	if !ok {
		return nil, fmt.Errorf("unknown provider %q (known: %v)", provider, Names())
	}
	var unknown []string
	for k := range params {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("provider %s takes no option %q", provider, unknown[0])
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%s: no secrets", provider)
	}
	for i, secret := range secrets {
		if strings.TrimSpace(secret) == "" {
			return nil, fmt.Errorf("%s: secret %d is empty", provider, i)
		}
	}

	switch provider {
	case "stripe":
		return Stripe(secrets...), nil
	case "github":
		return GitHub(secrets[0]), nil
	case "shopify":
		return Shopify(secrets[0]), nil
	case "slack":
		return Slack(secrets[0]), nil
	case "standardwebhooks":
		return StandardWebhooks(secrets...), nil
	case "svix":
		return Svix(secrets...), nil
	case "discord":
		key, err := ParseDiscordKey(secrets[0])
		if err != nil {
			return nil, err
		}
		return Discord(key), nil
	case "sendgrid":
		key, err := ParseSendGridKey(secrets[0])
		if err != nil {
			return nil, err
		}
		return SendGrid(key), nil
	case "twilio":
		return Twilio(secrets[0], params["public_url"]), nil
	case "square":
		return Square(secrets[0], params["public_url"]), nil
	case "paddle":
		return Paddle(secrets...), nil
	case "linear":
		return Linear(secrets[0]), nil
	case "zoom":
		return Zoom(secrets[0]), nil
	case "gitlab":
		return GitLab(secrets[0]), nil
	default: // hmac
		return HMAC(HMACScheme{
			Header:          params["header"],
			Prefix:          params["prefix"],
			Algorithm:       params["algorithm"],
			Encoding:        params["encoding"],
			TimestampHeader: params["timestamp_header"],
			SignedPayload:   params["signed_payload"],
			IDHeader:        params["id_header"],
			TypeHeader:      params["type_header"],
		}, secrets[0])
	}
}
