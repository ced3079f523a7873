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
)

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
	// MaxConnections bounds the connections open at once. A connection beyond it
	// is closed as soon as it is accepted, before anything is read: the sender sees
	// a reset and retries, and the process keeps its memory and file descriptors.
	//
	// Defaults to 4096.
	MaxConnections int
}

// fileHTTP is the http block as written.
type fileHTTP struct {
	ReadHeaderTimeout *string `yaml:"read_header_timeout"`
	ReadTimeout       *string `yaml:"read_timeout"`
	WriteTimeout      *string `yaml:"write_timeout"`
	IdleTimeout       *string `yaml:"idle_timeout"`
	MaxHeaderBytes    *int    `yaml:"max_header_bytes"`
	MaxConnections    *int    `yaml:"max_connections"`
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
	return h
}
