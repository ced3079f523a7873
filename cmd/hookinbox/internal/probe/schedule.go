package probe

import (
	"net/http"
	"strconv"
	"time"
)

// Schedule is how a provider delivers one event: how long it waits for an answer,
// and how long it waits after a failed attempt (a non-2xx answer, a timeout, a
// connection error) before the next. The schedules are the providers' documented ones
// (docs/PROBE.md names each source); where a provider publishes the shape but not the
// intervals, the intervals are the probe's, in that shape.
type Schedule struct {
	// Timeout is how long the provider waits for an answer before it gives up on an
	// attempt. It is not compressed by the time scale: a receiver slower than its
	// provider's timeout fails in the probe as in production.
	Timeout time.Duration

	// Retries are the delays before each retry, each counted from the failure of the
	// attempt before. After the last, the provider gives up on the delivery.
	Retries []time.Duration

	// RetryHeaders, when set, are headers the provider adds to retry n (from 1),
	// after an attempt that failed for reason ("http_timeout" or "http_error").
	RetryHeaders func(n int, reason string) http.Header
}

// Window is the time from the first attempt to the last retry.
func (s Schedule) Window() time.Duration {
	var sum time.Duration
	for _, d := range s.Retries {
		sum += d
	}
	return sum
}

// schedules are the providers' schedules by provider name (the names of
// sign.Names).
var schedules = map[string]Schedule{
	// Stripe: "up to three days with an exponential back off" in live mode; the
	// intervals and the timeout are not published.
	"stripe": {Timeout: 10 * time.Second, Retries: doubling(time.Minute, 0, 72*time.Hour, 0)},
	// GitHub never retries; a failed delivery can be redelivered, by hand or by a
	// script, for 3 days. The probe redelivers once, an hour later.
	"github": {Timeout: 10 * time.Second, Retries: []time.Duration{time.Hour}},
	// Shopify: 8 retries over 4 hours, exponential; intervals not published.
	"shopify": {Timeout: 5 * time.Second, Retries: doubling(time.Minute, 0, 0, 8)},
	// Slack: three retries, nearly immediately, after 1 minute and after 5 minutes,
	// each with X-Slack-Retry-Num and X-Slack-Retry-Reason.
	"slack": {Timeout: 3 * time.Second, Retries: []time.Duration{0, time.Minute, 5 * time.Minute}, RetryHeaders: slackRetryHeaders},
	// Standard Webhooks publishes no schedule; Svix's published one.
	"standardwebhooks": svixSchedule,
	"svix":             svixSchedule,
	"hmac":             svixSchedule,
	// Discord never resends an interaction: one not answered in 3 seconds fails.
	"discord": {Timeout: 3 * time.Second},
	// SendGrid retries for 24 hours; intervals and timeout not published.
	"sendgrid": {Timeout: 10 * time.Second, Retries: doubling(time.Minute, 0, 24*time.Hour, 0)},
	// Twilio retries a status callback only when its URL asks (#rc=); by default not.
	"twilio": {Timeout: 15 * time.Second},
	// Square retries for up to 24 hours; 10 seconds to answer; intervals not published.
	"square": {Timeout: 10 * time.Second, Retries: doubling(time.Minute, 0, 24*time.Hour, 0)},
	// Paddle: 5 seconds to answer; live notifications retried up to 60 times over 3
	// days, exponential; intervals not published.
	"paddle": {Timeout: 5 * time.Second, Retries: doubling(time.Minute, 80*time.Minute, 0, 60)},
	// Linear: three retries, after 1 minute, 1 hour and 6 hours.
	"linear": {Timeout: 10 * time.Second, Retries: []time.Duration{time.Minute, time.Hour, 6 * time.Hour}},
	// Zoom: 3 seconds to answer; retries 5 minutes after the first attempt, 20
	// minutes after the first retry, 60 minutes after the second.
	"zoom": {Timeout: 3 * time.Second, Retries: []time.Duration{5 * time.Minute, 20 * time.Minute, time.Hour}},
	// GitLab does not retry; a delivery can be resent by hand for 7 days. The probe
	// resends once, an hour later.
	"gitlab": {Timeout: 10 * time.Second, Retries: []time.Duration{time.Hour}},
}

// svixSchedule is Svix's published schedule: immediately, then 5 seconds, 5 minutes,
// 30 minutes, 2 hours, 5 hours, 10 hours and 10 hours; 15 seconds to answer.
var svixSchedule = Schedule{Timeout: 15 * time.Second, Retries: []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}}

// doubling returns delays that start at first and double, each at most ceiling (0:
// none), until the next would end beyond window (0: none) or there are max of them
// (0: none).
func doubling(first, ceiling, window time.Duration, max int) []time.Duration {
	var out []time.Duration
	var sum time.Duration
	for d := first; max == 0 || len(out) < max; d *= 2 {
		if ceiling > 0 && d > ceiling {
			d = ceiling
		}
		if window > 0 && sum+d > window {
			break
		}
		out = append(out, d)
		sum += d
	}
	return out
}

func slackRetryHeaders(n int, reason string) http.Header {
	h := http.Header{}
	h.Set("X-Slack-Retry-Num", strconv.Itoa(n))
	h.Set("X-Slack-Retry-Reason", reason)
	return h
}
