package config

import "fmt"

// Error is a configuration that cannot be used. Its message is one line that names
// the file, the key and the reason, and never contains a secret.
type Error struct {
	// File is the configuration file, empty when the value came from elsewhere.
	File string
	// Key is the path of the bad key, e.g. "endpoints[0].provider", or where the value
	// came from ("HOOKINBOX_DATABASE_URL").
	Key string
	// Reason says what is wrong with it.
	Reason string
}

func (e *Error) Error() string {
	prefix := "config"
	if e.File != "" {
		prefix = "config " + e.File
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", prefix, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", prefix, e.Key, e.Reason)
}

func errorf(file, key, format string, args ...any) *Error {
	return &Error{File: file, Key: key, Reason: fmt.Sprintf(format, args...)}
}
