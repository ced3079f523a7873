package config

import "time"

// Defaults of the http block: what one client can hold of the server.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	// DefaultMaxHeaderBytes is far above any provider's headers (a verifier reads
	// none longer than 8 KiB) and far below net/http's own 1 MiB.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConnections is below the open-file limit of a default Linux process
	// once Go has raised it, so that the database's connections always find a
	// descriptor.
	DefaultMaxConnections = 4096
	// DefaultMaxInflightBodyBytes bounds the request bodies held in memory at once
	// so that serve fits a 512 MiB host: with the idle connections of a full cap and
	// the process's base (docs/OPERATIONS.md, "Floods"), well under half of it.
	DefaultMaxInflightBodyBytes = 64 << 20
)

// SmallBodyBytes is the largest body that may use the whole of
// MaxInflightBodyBytes. Larger bodies share three quarters of it (LargeBodyBytes),
// so that a flood of large slow bodies leaves room for the events providers send,
// which are a few KiB.
const SmallBodyBytes = 64 << 10

// BodyGrain is the size of the reused buffers bodies are read into: the budget
// counts a body as its length rounded up to it.
const BodyGrain = 4 << 10

// HTTP bounds what a slow, idle or malicious client can hold of serve (the http
// block). Every field is set, to its default when the file leaves it out.
type HTTP struct {
	// ReadHeaderTimeout bounds the arrival of a request's headers, and how long a
	// new connection may stay silent (slowloris).
	//
	// Defaults to 5 seconds.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the arrival of a whole request, headers and body.
	//
	// Defaults to 30 seconds.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end of its
	// answer, a sync handler's transaction included. If it expires after commit the
	// sender sees an error and its retry is a duplicate, never a second application.
	//
	// Defaults to 60 seconds.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next request.
	//
	// Defaults to 2 minutes.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (and request line); beyond it the
	// answer is 431.
	//
	// Defaults to 64 KiB.
	MaxHeaderBytes int
	// MaxConnections bounds the connections open at once. To admit one beyond it,
	// the connection idle the longest (one that has sent nothing yet, waits between
	// keep-alive requests, or lingers after its last answer) is closed; a request in
	// progress is never cut. When every connection has a request in progress, the
	// new one is closed as soon as it is accepted, before anything is read. Above
	// three quarters of it, the first-byte and keep-alive idle timeouts are
	// shortened to a second.
	//
	// Defaults to 4096.
	MaxConnections int
	// MaxConnectionsPerAddress bounds the connections of one client address (the
	// TCP peer's, never a forwarded header); beyond it, that address's connection
	// idle the longest is closed, or the new one when none is idle. Behind a load
	// balancer or a NAT every client shares one address: leave it off there.
	//
	// Defaults to 0, off.
	MaxConnectionsPerAddress int
	// MaxInflightBodyBytes bounds the request bodies of the endpoints held in memory
	// at once, counted by their declared Content-Length (an endpoint's
	// max_body_bytes for a chunked one) rounded up to BodyGrain. A request whose body
	// does not fit is answered 503 with Retry-After at once, before its body is read.
	// Bodies over SmallBodyBytes share three quarters of it.
	//
	// Defaults to 64 MiB.
	MaxInflightBodyBytes int64
}

// LargeBodyBytes returns the part of MaxInflightBodyBytes that bodies over
// SmallBodyBytes may hold together.
func (h HTTP) LargeBodyBytes() int64 {
	return h.MaxInflightBodyBytes / 4 * 3
}

// budgetFor returns the least MaxInflightBodyBytes that admits a body of n bytes.
func budgetFor(n int64) int64 {
	n = (n + BodyGrain - 1) / BodyGrain * BodyGrain
	if n <= SmallBodyBytes {
		return n
	}
	return (n + 2) / 3 * 4
}

// fileHTTP is the http block as written.
type fileHTTP struct {
	ReadHeaderTimeout *string `yaml:"read_header_timeout"`
	ReadTimeout       *string `yaml:"read_timeout"`
	WriteTimeout      *string `yaml:"write_timeout"`
	IdleTimeout       *string `yaml:"idle_timeout"`
	MaxHeaderBytes    *int    `yaml:"max_header_bytes"`
	MaxConnections    *int    `yaml:"max_connections"`
	MaxPerAddress     *int    `yaml:"max_connections_per_address"`
	MaxInflightBody   *int64  `yaml:"max_inflight_body_bytes"`
}

// minHeaderBytes keeps max_header_bytes above what providers' signed requests need.
const minHeaderBytes = 16 << 10

func (v *validator) http(fh *fileHTTP) (HTTP, error) {
	var h HTTP
	var err error
	if h.ReadHeaderTimeout, err = v.duration("http.read_header_timeout", fh.ReadHeaderTimeout, DefaultReadHeaderTimeout); err != nil {
		return h, err
	}
	if h.ReadTimeout, err = v.duration("http.read_timeout", fh.ReadTimeout, DefaultReadTimeout); err != nil {
		return h, err
	}
	if h.WriteTimeout, err = v.duration("http.write_timeout", fh.WriteTimeout, DefaultWriteTimeout); err != nil {
		return h, err
	}
	if h.IdleTimeout, err = v.duration("http.idle_timeout", fh.IdleTimeout, DefaultIdleTimeout); err != nil {
		return h, err
	}
	if h.MaxConnections, err = v.atLeastOne("http.max_connections", fh.MaxConnections, DefaultMaxConnections); err != nil {
		return h, err
	}
	if h.MaxConnectionsPerAddress, err = v.atLeastOne("http.max_connections_per_address", fh.MaxPerAddress, 0); err != nil {
		return h, err
	}
	if h.MaxConnectionsPerAddress > h.MaxConnections {
		return h, v.keyError("http.max_connections_per_address", "%d is above http.max_connections (%d)", h.MaxConnectionsPerAddress, h.MaxConnections)
	}
	h.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	if fh.MaxInflightBody != nil {
		if *fh.MaxInflightBody <= 0 {
			return h, v.keyError("http.max_inflight_body_bytes", "must be positive, got %d", *fh.MaxInflightBody)
		}
		h.MaxInflightBodyBytes = *fh.MaxInflightBody
	}
	h.MaxHeaderBytes = DefaultMaxHeaderBytes
	if fh.MaxHeaderBytes != nil {
		if *fh.MaxHeaderBytes < minHeaderBytes {
			return h, v.keyError("http.max_header_bytes", "must be at least %d, got %d", minHeaderBytes, *fh.MaxHeaderBytes)
		}
		h.MaxHeaderBytes = *fh.MaxHeaderBytes
	}
	// The whole request must be able to arrive after its headers did.
	if h.ReadTimeout < h.ReadHeaderTimeout {
		return h, v.keyError("http.read_timeout", "%s must not be shorter than http.read_header_timeout (%s)", h.ReadTimeout, h.ReadHeaderTimeout)
	}
	return h, nil
}

// WithDefaults returns h with every zero field set to its default, for a Config not
// built by Load.
func (h HTTP) WithDefaults() HTTP {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&h.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	set(&h.ReadTimeout, DefaultReadTimeout)
	set(&h.WriteTimeout, DefaultWriteTimeout)
	set(&h.IdleTimeout, DefaultIdleTimeout)
	if h.MaxHeaderBytes == 0 {
		h.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if h.MaxConnections == 0 {
		h.MaxConnections = DefaultMaxConnections
	}
	if h.MaxInflightBodyBytes == 0 {
		h.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	}
	return h
}

// bodyBudget refuses a budget in which an endpoint's largest body could never fit.
func (v *validator) bodyBudget(h HTTP, endpoints []Endpoint) error {
	for i := range endpoints {
		limit := endpoints[i].BodyLimit()
		if need := budgetFor(limit); h.MaxInflightBodyBytes < need {
			return v.keyError("http.max_inflight_body_bytes",
				"%d cannot admit a body of endpoints[%d] (max_body_bytes %d): bodies over %d bytes share three quarters of it; want at least %d",
				h.MaxInflightBodyBytes, i, limit, SmallBodyBytes, need)
		}
	}
	return nil
}
