package config

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/hookinbox/hookinbox/outbox"
)

// outbox validates the outbox block and returns the dispatcher's settings, every
// field set, and the default sink (outbox.sink), nil when absent.
func (v *validator) outbox(fo *fileOutbox) (outbox.Config, *Sink, error) {
	oc := outbox.Config{Concurrency: DefaultOutboxConcurrency, MaxAttempts: DefaultOutboxMaxAttempts}
	var err error
	if oc.Concurrency, err = v.atLeastOne("outbox.concurrency", fo.Concurrency, oc.Concurrency); err != nil {
		return oc, nil, err
	}
	if oc.BatchSize, err = v.atLeastOne("outbox.batch_size", fo.BatchSize, DefaultOutboxBatchSize); err != nil {
		return oc, nil, err
	}
	if oc.MaxAttempts, err = v.atLeastOne("outbox.max_attempts", fo.MaxAttempts, oc.MaxAttempts); err != nil {
		return oc, nil, err
	}
	if oc.Lease, err = v.duration("outbox.lease", fo.Lease, DefaultOutboxLease); err != nil {
		return oc, nil, err
	}
	if oc.PollInterval, err = v.duration("outbox.poll_interval", fo.PollInterval, DefaultOutboxPollInterval); err != nil {
		return oc, nil, err
	}
	if oc.DeliveryTimeout, err = v.duration("outbox.delivery_timeout", fo.DeliveryTimeout, min(DefaultOutboxDeliveryTimeout, oc.Lease/2)); err != nil {
		return oc, nil, err
	}
	// A delivery still running when its lease ends races the next claim of the same
	// message: the receiver would get it twice at once.
	switch {
	case oc.DeliveryTimeout <= 0:
		return oc, nil, v.keyError("outbox.lease", "%s leaves no time for a delivery", oc.Lease)
	case oc.DeliveryTimeout >= oc.Lease:
		return oc, nil, v.keyError("outbox.delivery_timeout", "%s must be shorter than outbox.lease (%s)", oc.DeliveryTimeout, oc.Lease)
	}
	// The library's own check, so that a rule it adds is not met first at serve.
	if _, err := outbox.NewDispatcher(nil, &oc); err != nil {
		return oc, nil, v.keyError("outbox", "%s", strings.TrimPrefix(err.Error(), "outbox: "))
	}
	var sink *Sink
	if fo.Sink != nil {
		if sink, err = v.sink("outbox.sink", fo.Sink); err != nil {
			return oc, nil, err
		}
	}
	return oc, sink, nil
}

// sink validates a forward target written at key: exactly one of url and
// nats_subject, and its delivery options.
func (v *validator) sink(key string, fs *fileSink) (*Sink, error) {
	s, err := v.sinkTarget(key, fs)
	if err != nil {
		return nil, err
	}
	if fs.Concurrency != nil {
		if s.Options.Concurrency, err = v.atLeastOne(key+".concurrency", fs.Concurrency, 0); err != nil {
			return nil, err
		}
	}
	if fs.Rate != nil {
		if *fs.Rate <= 0 {
			return nil, v.keyError(key+".rate", "must be positive (deliveries per second), got %v", *fs.Rate)
		}
		s.Options.Rate = *fs.Rate
	}
	if fs.Ordered != nil {
		s.Options.Ordered = *fs.Ordered
	}
	return s, nil
}

func (v *validator) sinkTarget(key string, fs *fileSink) (*Sink, error) {
	switch {
	case fs.URL != nil && fs.NATSSubject != nil:
		return nil, v.keyError(key, "give url or nats_subject, not both")
	case fs.URL != nil:
		if err := checkSinkURL(*fs.URL); err != nil {
			return nil, v.keyError(key+".url", "%v", err)
		}
		return &Sink{URL: *fs.URL}, nil
	case fs.NATSSubject != nil:
		if err := checkSubject(*fs.NATSSubject); err != nil {
			return nil, v.keyError(key+".nats_subject", "%v", err)
		}
		return &Sink{NATSSubject: *fs.NATSSubject}, nil
	default:
		return nil, v.keyError(key, "needs url (an http or https URL) or nats_subject (a JetStream subject)")
	}
}

// checkSinkURL accepts an absolute http or https URL. Messages show the URL without
// its password.
func checkSinkURL(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("required")
	}
	u, err := url.Parse(s)
	if err != nil {
		// url's error quotes the URL, password included.
		return fmt.Errorf("is not a URL (write e.g. http://127.0.0.1:9000/events)")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http or https URL (write e.g. http://127.0.0.1:9000/events)", u.Redacted())
	}
	return nil
}

// checkSubject accepts a NATS subject a message can be published to: dot-separated
// non-empty tokens, no whitespace, no wildcard.
func checkSubject(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("required")
	case strings.ContainsAny(s, "*>"):
		return fmt.Errorf("%q has a wildcard (* or >): messages are published to one subject; the stream may capture a wildcard", s)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%q contains whitespace", s)
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return fmt.Errorf("%q has an empty token (a leading, trailing or doubled dot)", s)
		}
	}
	return nil
}

// checkNATSURL accepts what nats.Connect does with a scheme: one URL or several
// separated by commas, each nats://, tls://, ws:// or wss:// with a host.
func checkNATSURL(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" {
			return fmt.Errorf("is not a NATS URL (write e.g. %s)", DefaultNATSURL)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("%q: unknown scheme %q (want nats, tls, ws or wss)", u.Redacted(), u.Scheme)
		}
	}
	return nil
}
