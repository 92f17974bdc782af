// Command pause is the sandbox ("pause") container of the local cluster: it holds the Pod's
// namespaces open, reaps zombies (it is PID 1 when the Pod shares its PID namespace), and
// exits 0 on SIGINT or SIGTERM. It is packed into toolgate.local/pause:dev because nothing
// can be pulled here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
