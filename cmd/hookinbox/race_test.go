//go:build race

package main

// The black-box tests build the binary with the race detector when they run under it.
func init() { raceEnabled = true }
