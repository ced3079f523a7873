package testnats

import "syscall"

// pdeathsig stops the server when the test process that started it dies.
func pdeathsig() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
