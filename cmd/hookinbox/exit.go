package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

// Exit codes that scripts can rely on.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a command line or configuration the command refuses before doing
// anything: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitCode maps an error to the process's exit code.
func exitCode(err error) int {
	var ue *usageError
	var ce *config.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.As(err, &ce):
		return exitUsage
	default:
		return exitFailure
	}
}

// printError writes err as one line on stderr.
func (a *app) printError(err error) {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	fmt.Fprintln(a.stderr, "hookinbox: "+msg)
}
