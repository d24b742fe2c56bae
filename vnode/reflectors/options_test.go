package reflectors_test

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflectors"
)

// parse reads args into fresh Options, as both commands do.
func parse(args []string) (*reflectors.Options, error) {
	o := &reflectors.Options{}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

func TestOptionsFlags(t *testing.T) {
	o, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if args := o.Args(); len(args) != 0 {
		t.Errorf("the defaults give a virtual kubelet flags %v, want none (its command line stays as it was)", args)
	}
	for _, res := range objects.PolicyResources {
		if o.Policies.Of(res) != objects.DenyList {
			t.Errorf("default policy of %s: %s", res, o.Policies.Of(res))
		}
	}

	if o.DisableStorage || o.VirtualStorageClass != "liqo" || o.RemoteStorageClass != "" {
		t.Errorf("storage defaults %+v", o)
	}

	in := []string{"--configmap-reflection-type=allowlist", "--ingress-reflection-type=AllowList", "--secret-reflection-type=DenyList",
		"--remote-real-ingress-class-name=nginx", "--enable-storage=false", "--virtual-storage-class-name=virtual",
		"--remote-real-storage-class-name=fast", "--enable-apiserver-support", "--home-api-server-host=api.consumer.example",
		"--home-api-server-port=6443"}
	o, err = parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if o.Policies.Of(objects.ResourceConfigMap) != objects.AllowList || o.Policies.Of(objects.ResourceIngress) != objects.AllowList ||
		o.Policies.Of(objects.ResourceService) != objects.DenyList || o.RemoteIngressClass != "nginx" ||
		!o.DisableStorage || o.VirtualStorageClass != "virtual" || o.RemoteStorageClass != "fast" {
		t.Errorf("parsed %+v", o)
	}
	// What the controller manager passes on to a virtual kubelet's Deployment gives it the same.
	args := o.Args()
	want := []string{"--configmap-reflection-type=AllowList", "--ingress-reflection-type=AllowList", "--remote-real-ingress-class-name=nginx",
		"--enable-storage=false", "--virtual-storage-class-name=virtual", "--remote-real-storage-class-name=fast",
		"--enable-apiserver-support", "--home-api-server-host=api.consumer.example", "--home-api-server-port=6443"}
	if !slices.Equal(args, want) {
		t.Errorf("Args() = %v, want %v", args, want)
	}
	again, err := parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Args(), args) {
		t.Errorf("round trip: %v, want %v", again.Args(), args)
	}

	if _, err := parse([]string{"--service-reflection-type=Sometimes"}); err == nil ||
		!strings.Contains(err.Error(), "service-reflection-type") || !strings.Contains(err.Error(), "AllowList") {
		t.Errorf("a bad policy: %v, want an error naming the flag and the accepted values", err)
	}
	if _, err := parse([]string{"--enable-apiserver-support"}); err == nil || !strings.Contains(err.Error(), "--home-api-server-host") {
		t.Errorf("API server support without the API server's host: %v, want an error naming --home-api-server-host", err)
	}
	if _, err := parse([]string{"--enable-storage=maybe"}); err == nil || !strings.Contains(err.Error(), "enable-storage") {
		t.Errorf("a bad --enable-storage: %v", err)
	}
	if n := len(reflectors.New(reflectors.Options{DisableStorage: true})); n != len(reflectors.All())-1 {
		t.Errorf("with storage disabled, %d reflectors; want one fewer than the %d of the defaults", n, len(reflectors.All()))
	}
	bad := &reflectors.Options{Policies: objects.Policies{"pod": objects.AllowList}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "configmap") {
		t.Errorf("a policy of a kind that has none: %v, want an error listing the kinds", err)
	}
}
