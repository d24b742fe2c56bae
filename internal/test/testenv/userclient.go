package testenv

import (
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UserClient returns a client of the cluster authenticating as the user name (in groups) with a
// client certificate of the cluster's client CA (UserKubeconfig): a peer's identity, for tests
// of what it may do. It fails tb when it cannot make one.
func (c *Cluster) UserClient(tb testing.TB, name string, groups ...string) client.Client {
	tb.Helper()
	kc, err := c.UserKubeconfig(name, groups...)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		tb.Fatalf("cluster %s: kubeconfig of user %s: %v", c.Name, name, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		tb.Fatalf("cluster %s: client of user %s: %v", c.Name, name, err)
	}
	return cl
}
