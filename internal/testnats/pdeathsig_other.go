//go:build !linux

package testnats

import "syscall"

func pdeathsig() *syscall.SysProcAttr { return nil }
