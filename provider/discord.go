package provider

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

const (
	// discordSignatureHeader carries the hex Ed25519 signature of the timestamp
	// followed by the body.
	discordSignatureHeader = "X-Signature-Ed25519"
	// discordTimestampHeader is the signing time in Unix seconds.
	discordTimestampHeader = "X-Signature-Timestamp"

	// discordPing is the interaction type (1) by which Discord checks an
	// Interactions Endpoint URL, and the Type of the Verified that stands for it.
	discordPing = "ping"

	// discordRetryWindow: Discord does not resend an interaction. One that is not
	// answered within three seconds fails for the user, so a copy can only come
	// from a replay, which the timestamp bounds to minutes.
	discordRetryWindow = time.Hour
)

// discordInteractionTypes names Discord's interaction types, for Verified.Type.
var discordInteractionTypes = map[string]string{
	"1": discordPing,
	"2": "application_command",
	"3": "message_component",
	"4": "application_command_autocomplete",
	"5": "modal_submit",
}

// DiscordConfig configures a Discord verifier.
type DiscordConfig struct {
	// PublicKeys are the application's public keys, as the Developer Portal shows
	// them (64 hex digits). Discord signs with one key per application; several are
	// accepted so that one endpoint can serve several applications, or a key can be
	// replaced without a gap. At least one is required. There is no secret: Discord
	// signs with its private key.
	PublicKeys []string

	// Tolerance is how far X-Signature-Timestamp may be from now, in either
	// direction. Zero means DefaultTolerance. Negative is an error.
	Tolerance time.Duration

	// NowFunc returns the current time. Nil means time.Now; tests set it.
	NowFunc func() time.Time
}

// Discord verifies the Ed25519 signatures of Discord interactions (the
// Interactions Endpoint URL of an application). It is safe for concurrent use.
//
// Discord also implements Challenger: the PING by which Discord checks the URL
// verifies like any interaction and is answered with a PONG.
//
// Discord expects the answer to an interaction to be an interaction response
// within three seconds; hookinbox answers with its own outcome, so an application
// responds through Discord's interaction callback endpoint (from the outbox),
// not in the HTTP answer.
type Discord struct {
	keys      []ed25519.PublicKey
	tolerance time.Duration
	now       func() time.Time
}

var (
	_ Verifier   = (*Discord)(nil)
	_ Challenger = (*Discord)(nil)
)

// NewDiscord returns a Discord verifier, or an error if cfg has no public key, a
// key that is not 32 bytes of hex, or a negative tolerance.
func NewDiscord(cfg DiscordConfig) (*Discord, error) {
	keys, err := ed25519Keys("discord", cfg.PublicKeys)
	if err != nil {
		return nil, err
	}
	tolerance, err := toleranceOrDefault("discord", cfg.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Discord{keys: keys, tolerance: tolerance, now: nowOrDefault(cfg.NowFunc)}, nil
}

// Name returns "discord".
func (*Discord) Name() string { return "discord" }

// RetryWindow returns one hour: Discord never resends an interaction.
func (*Discord) RetryWindow() time.Duration { return discordRetryWindow }

// Verify accepts the interaction only if X-Signature-Ed25519 is the hex Ed25519
// signature, by one of the configured public keys, of X-Signature-Timestamp exactly
// as sent followed by body exactly as received, and the timestamp is within the
// tolerance of now. SecretIndex is the position of the public key that verified.
//
// The body must be an interaction: its id is the interaction's "id" (a snowflake),
// its type the name of its numeric "type": ping, application_command,
// message_component, application_command_autocomplete, modal_submit, or
// "interaction_type_N" for a type Discord adds later.
//
// Errors wrap this package's sentinels and never contain the body.
func (d *Discord) Verify(h http.Header, body []byte) (Verified, error) {
	sig, ts, signedAt, err := signatureAndTimestamp(h, "discord", discordSignatureHeader, discordTimestampHeader)
	if err != nil {
		return Verified{}, err
	}
	if len(sig) != hex.EncodedLen(ed25519.SignatureSize) {
		return Verified{}, fmt.Errorf("discord: %s has %d hex digits, want %d: %w",
			discordSignatureHeader, len(sig), hex.EncodedLen(ed25519.SignatureSize), ErrNoValidSignature)
	}
	signature, err := hex.DecodeString(sig)
	if err != nil {
		return Verified{}, fmt.Errorf("discord: %s is not hex: %w", discordSignatureHeader, ErrNoValidSignature)
	}

	// The timestamp is signed as sent.
	message := make([]byte, 0, len(ts)+len(body))
	message = append(append(message, ts...), body...)
	index := -1
	for i, key := range d.keys {
		if ed25519.Verify(key, message, signature) {
			index = i
			break
		}
	}
	if index < 0 {
		return Verified{}, fmt.Errorf("discord: signature matches none of %d public keys: %w", len(d.keys), ErrNoValidSignature)
	}
	if err := checkSkew("discord", d.now(), signedAt, d.tolerance); err != nil {
		return Verified{}, err
	}

	id, typ, err := discordInteraction(body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt, BodyIsJSON: true}, nil
}

// Challenge answers a verified PING with a PONG, {"type":1}, and true; any other
// interaction gets nil and false. v must come from Verify.
func (*Discord) Challenge(v Verified) ([]byte, bool) {
	if v.Type != discordPing {
		return nil, false
	}
	return []byte(`{"type":1}`), true
}

// discordInteraction extracts the id and type of a verified interaction.
func discordInteraction(body []byte) (id, typ string, err error) {
	fields, err := eventObject("discord", body)
	if err != nil {
		return "", "", err
	}
	if id, err = eventString("discord", fields, "id", true); err != nil {
		return "", "", err
	}
	raw, ok := fields["type"]
	if !ok {
		return "", "", fmt.Errorf("discord: interaction has no type: %w", ErrUnparsableEvent)
	}
	var n uint8
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", "", fmt.Errorf("discord: interaction type is not a small number: %w", ErrUnparsableEvent)
	}
	key := strconv.Itoa(int(n))
	if name, ok := discordInteractionTypes[key]; ok {
		return id, name, nil
	}
	return id, "interaction_type_" + key, nil
}
