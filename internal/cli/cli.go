// Package cli holds what the commands (cmd/) share: how they find the cluster they work on and
// how they end on an error.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig loads the credentials of the cluster a command works on: the kubeconfig file when
// one is given (its --kubeconfig flag), otherwise the pod's in-cluster credentials.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no --kubeconfig and not in a cluster: %w", err)
	}
	return cfg, nil
}

// Main runs the command named name: run with the command line's arguments and standard output,
// under a context that an interrupt or SIGTERM cancels, then Exit with its error.
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	Exit(name, err)
}

// Exit ends the command named name: with status 1 and err on stderr, as "name: err", when err
// is not nil; otherwise it returns.
func Exit(name string, err error) {
	exit(os.Stderr, os.Exit, name, err)
}

func exit(w io.Writer, osExit func(int), name string, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(w, "%s: %v\n", name, err)
	osExit(1)
}
