// Command pause is the real-node test bed's pod sandbox process (containerd's sandbox_image):
// it holds the pod's namespaces and sleeps until SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}
