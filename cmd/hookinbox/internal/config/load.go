package config

import (
	"fmt"
	"os"
)

// Options tune Load.
type Options struct {
	// ResolveSecrets reads every endpoint's secrets and refuses an absent or empty
	// one. serve needs them; operator commands (status, events, cleanup) do not, and
	// then each verifier is built with a placeholder secret so that its provider's
	// retry window is still known.
	ResolveSecrets bool

	// LookupEnv reads the environment.
	//
	// Defaults to os.LookupEnv.
	LookupEnv func(key string) (string, bool)
}

func (o Options) withDefaults() Options {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	return o
}

// Load reads, overrides and validates the configuration file at path. Every error it
// returns is an *Error.
func Load(path string, opts Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Reason: fmt.Sprintf("cannot read: %v", unwrapPathError(err))}
	}
	return Parse(path, data, opts)
}

// Parse is Load on the contents of a file; path names it in errors and anchors
// relative secret file paths.
func Parse(path string, data []byte, opts Options) (*Config, error) {
	opts = opts.withDefaults()
	fc, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	return validate(path, fc, opts)
}

// Default is the configuration without a file: no endpoints, the defaults, and the
// environment overrides. Its errors are *Error.
func Default(opts Options) (*Config, error) {
	return validate("", &fileConfig{}, opts.withDefaults())
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
