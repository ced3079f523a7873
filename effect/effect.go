// Package effect records external side effects — a write-back to the provider's API,
// an e-mail, a payment — so that each happens once, however many days later the same
// webhook is retried.
//
// A provider's idempotency key protects retries for a while (Stripe keeps keys for 24
// hours) while webhooks are retried for days; the result recorded in your own database
// does not expire. Do takes a lease on the key, calls the function, and records its
// result; a recorded key returns the stored result without calling again.
//
//	rec := effect.New(pgxdriver.New(pool).Executor(), nil)
//	key, _ := effect.Key(ev.ID, "update-customer-metadata")
//	result, err := rec.Do(ctx, key, func(ctx context.Context, key string) ([]byte, error) {
//		cust, err := stripeClient.Customers.Update(id, params.SetIdempotencyKey(key))
//		...
//		return []byte(cust.ID), err
//	})
//
// The guarantee has one seam: if the process dies after fn succeeded and before the
// result is recorded, the lease ends and a later Do calls fn again. Pass the key to the
// provider as its idempotency key (as above), so that seam is covered by the
// provider's own de-duplication within its window.
package effect

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// MaxKeyLength is the longest key accepted: Stripe's limit for idempotency keys.
const MaxKeyLength = 255

// ErrInvalidKey is returned for an empty key, one longer than MaxKeyLength, or one that
// looks like it carries an e-mail address (keys are stored and sent to providers, which
// advise against personal data in them).
var ErrInvalidKey = errors.New("invalid effect key")

// ErrNotRecorded is returned, with fn's result, when fn succeeded but its result could
// not be recorded (the lease ran out, or the database failed or did not answer within
// Config.RecordTimeout). The effect happened; a later Do may call fn again, which the
// provider's idempotency key should absorb.
var ErrNotRecorded = errors.New("effect made but not recorded")

var emailLike = regexp.MustCompile(`[^\s@:<>]+@[^\s@:<>]+\.[A-Za-z]{2,}`)

// ValidateKey reports whether key is usable: non-empty, at most MaxKeyLength
// characters, and with nothing that looks like an e-mail address.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyLength:
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidKey, MaxKeyLength)
	case emailLike.MatchString(key):
		return fmt.Errorf("%w: looks like it contains an e-mail address", ErrInvalidKey)
	}
	return nil
}

// Key returns the deterministic key of an operation caused by a webhook event:
// "webhook:<event id>:<operation>". The same event and operation give the same key on
// every retry; a random key per call would make every retry a new request.
func Key(eventID, operation string) (string, error) {
	if eventID == "" || operation == "" {
		return "", fmt.Errorf("%w: needs an event id and an operation", ErrInvalidKey)
	}
	key := "webhook:" + eventID + ":" + operation
	return key, ValidateKey(key)
}

// Config configures a Recorder.
type Config struct {
	// Lease is how long one caller may take to make the call before another may take
	// over the key. fn's context ends with it.
	//
	// Defaults to 1 minute.
	Lease time.Duration

	// PollInterval is how often a caller waiting on another's lease looks again.
	//
	// Defaults to 50 milliseconds.
	PollInterval time.Duration

	// RecordTimeout bounds the statement that records fn's result, or that releases
	// the key after fn failed. It runs even when ctx was cancelled during the call
	// (the call was made), so this bound is what keeps Do from waiting on a database
	// that stopped answering. A result not recorded in time is returned with
	// ErrNotRecorded; a key not released in time is taken over when its lease ends.
	//
	// Defaults to 10 seconds.
	RecordTimeout time.Duration
}

// Recorder records effects in the effects table.
type Recorder struct {
	ex     driver.Executor
	config Config
}

// New returns a recorder on the executor of a driver (Driver.Executor()).
func New(ex driver.Executor, config *Config) *Recorder {
	var c Config
	if config != nil {
		c = *config
	}
	if c.Lease <= 0 {
		c.Lease = time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 50 * time.Millisecond
	}
	if c.RecordTimeout <= 0 {
		c.RecordTimeout = 10 * time.Second
	}
	return &Recorder{ex: ex, config: c}
}

// Do calls fn once for key and records its result; every later Do with the key returns
// the recorded result without calling fn. If fn fails, nothing is recorded and a later
// Do calls it again. A concurrent Do with the same key waits for the caller holding it
// and returns its result (or takes over if that caller fails or its lease runs out).
//
// fn receives the key, to send as the provider's idempotency key, and a context that
// ends with the lease. Once fn has returned, its result is recorded (or the key
// released) even if ctx was cancelled meanwhile, within Config.RecordTimeout: a
// database that stops answering makes Do return ErrNotRecorded, never hang.
func (r *Recorder) Do(ctx context.Context, key string, fn func(ctx context.Context, key string) ([]byte, error)) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	for {
		c, err := r.ex.EffectClaim(ctx, &driver.EffectClaimParams{Key: key, Lease: r.config.Lease})
		if err != nil {
			return nil, err
		}
		if c.Done {
			return c.Result, nil
		}
		if c.Token != 0 {
			return r.call(ctx, key, c.Token, fn)
		}
		// Another caller holds the key: wait for its result or the end of its lease.
		wait := r.config.PollInterval
		if until := time.Until(c.LeaseUntil); until > 0 && until < wait {
			wait = until
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for effect %q held by another caller: %w", key, ctx.Err())
		case <-time.After(wait):
		}
	}
}

func (r *Recorder) call(ctx context.Context, key string, token int64, fn func(context.Context, string) ([]byte, error)) ([]byte, error) {
	fctx, cancel := context.WithTimeout(ctx, r.config.Lease)
	result, err := fn(fctx, key)
	cancel()
	// Recording happens even if ctx was cancelled meanwhile (the call was made), but
	// within RecordTimeout: past it the lease decides, as after a crash.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), r.config.RecordTimeout)
	defer rcancel()
	if err != nil {
		if rerr := r.ex.EffectRelease(rctx, key, token); rerr != nil {
			return nil, errors.Join(err, rerr) // the lease ends on its own
		}
		return nil, err
	}
	ok, err := r.ex.EffectComplete(rctx, key, token, result)
	if err != nil {
		return result, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	if !ok {
		return result, fmt.Errorf("%w: the lease on %q ran out during the call", ErrNotRecorded, key)
	}
	return result, nil
}
