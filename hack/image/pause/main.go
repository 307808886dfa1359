// Command pause is the process of every pod sandbox on the test bed's node (test/testenv,
// Options.Node): what Kubernetes' build/pause/linux/pause.c does, in Go, built here from source
// (static) so that no image comes from outside the machine. It holds the pod's namespaces, reaps the
// children it inherits as the pod's PID 1 (shareProcessNamespace), and exits on SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
