package reflectors

import (
	"flag"
	"fmt"
	"slices"
	"strconv"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
)

// Options tune the reflectors of every virtual node. The zero value is the defaults.
type Options struct {
	// Policies are the reflection policies of ConfigMaps, Secrets, Services (and so their
	// EndpointSlices) and Ingresses: DenyList (the default) or AllowList.
	Policies objects.Policies
	// RemoteIngressClass, when set, is the ingressClassName of every reflected Ingress on the
	// provider; "": each keeps its own.
	RemoteIngressClass string
	// DisableStorage leaves the claims of the virtual storage class unprovisioned.
	DisableStorage bool
	// VirtualStorageClass is the virtual storage class's name; "": consts.DefaultVirtualStorageClass.
	VirtualStorageClass string
	// RemoteStorageClass is the storage class of the claims' copies on the provider when a claim
	// does not name one (consts.RemoteStorageClassAnnotation); "": the provider's default.
	RemoteStorageClass string
	// APIServerSupport gives offloaded pods service-account tokens of this cluster, for its API
	// server at HomeAPIServerHost:HomeAPIServerPort (as the provider's pods reach it), instead
	// of the provider's.
	APIServerSupport                     bool
	HomeAPIServerHost, HomeAPIServerPort string
}

// Flag names, upstream Liqo's virtual kubelet's.
const (
	// FlagRemoteIngressClass sets RemoteIngressClass.
	FlagRemoteIngressClass = "remote-real-ingress-class-name"
	// FlagEnableStorage sets DisableStorage (to its opposite).
	FlagEnableStorage = "enable-storage"
	// FlagVirtualStorageClass sets VirtualStorageClass.
	FlagVirtualStorageClass = "virtual-storage-class-name"
	// FlagRemoteStorageClass sets RemoteStorageClass.
	FlagRemoteStorageClass = "remote-real-storage-class-name"
	// FlagAPIServerSupport, FlagHomeAPIServerHost and FlagHomeAPIServerPort set
	// APIServerSupport, HomeAPIServerHost and HomeAPIServerPort.
	FlagAPIServerSupport  = "enable-apiserver-support"
	FlagHomeAPIServerHost = "home-api-server-host"
	FlagHomeAPIServerPort = "home-api-server-port"
)

// PolicyFlag is the name of the flag that sets a kind's reflection policy
// (--configmap-reflection-type and so on).
func PolicyFlag(resource string) string { return resource + "-reflection-type" }

// Bind registers the options' flags on fs; what they hold becomes their defaults.
func (o *Options) Bind(fs *flag.FlagSet) {
	if o.Policies == nil {
		o.Policies = objects.Policies{}
	}
	for _, res := range objects.PolicyResources {
		usage := fmt.Sprintf("which %ss are reflected to providers: %s (all but those annotated liqo.io/skip-reflection) or %s (only those annotated liqo.io/allow-reflection)",
			res, objects.DenyList, objects.AllowList)
		if res == objects.ResourceService {
			usage += "; EndpointSlices follow their Service"
		}
		fs.Var(&policyValue{policies: o.Policies, resource: res}, PolicyFlag(res), usage)
	}
	fs.StringVar(&o.RemoteIngressClass, FlagRemoteIngressClass, o.RemoteIngressClass,
		"ingressClassName of the Ingresses reflected to providers (default: each keeps its own)")
	fs.BoolFunc(FlagEnableStorage, "provision the claims of the virtual storage class placed on virtual nodes on their providers (default true)",
		func(s string) error {
			on, err := strconv.ParseBool(s)
			o.DisableStorage = !on
			return err //nolint:wrapcheck // the flag package names the flag
		})
	if o.VirtualStorageClass == "" {
		o.VirtualStorageClass = consts.DefaultVirtualStorageClass
	}
	fs.StringVar(&o.VirtualStorageClass, FlagVirtualStorageClass, o.VirtualStorageClass,
		"name of the virtual storage class (provisioner "+consts.StorageProvisioner+", volumeBindingMode WaitForFirstConsumer)")
	fs.StringVar(&o.RemoteStorageClass, FlagRemoteStorageClass, o.RemoteStorageClass,
		"storage class of the claims' copies on providers, unless a claim's "+consts.RemoteStorageClassAnnotation+" annotation names one (default: the provider's default class)")
	fs.BoolVar(&o.APIServerSupport, FlagAPIServerSupport, o.APIServerSupport,
		"give offloaded pods service-account tokens of this cluster (TokenRequest, refreshed) for its API server at --"+FlagHomeAPIServerHost+
			" instead of the provider's")
	fs.StringVar(&o.HomeAPIServerHost, FlagHomeAPIServerHost, o.HomeAPIServerHost,
		"with --"+FlagAPIServerSupport+": this cluster's API server host (name or IP) as the providers' pods reach it; their KUBERNETES_SERVICE_HOST")
	fs.StringVar(&o.HomeAPIServerPort, FlagHomeAPIServerPort, o.HomeAPIServerPort,
		"with --"+FlagAPIServerSupport+": that API server's port; their KUBERNETES_SERVICE_PORT (default: the providers' own)")
}

// Validate checks the options; its errors name the flag.
func (o *Options) Validate() error {
	if o.APIServerSupport && o.HomeAPIServerHost == "" {
		return fmt.Errorf("--%s needs --%s: the host of this cluster's API server as the providers' pods reach it (its tokens are for it)",
			FlagAPIServerSupport, FlagHomeAPIServerHost)
	}
	for res, p := range o.Policies {
		if !slices.Contains(objects.PolicyResources, res) {
			return o.Policies.Validate()
		}
		if _, err := objects.ParsePolicy(string(p)); err != nil {
			return fmt.Errorf("--%s: %w", PolicyFlag(res), err)
		}
	}
	return nil
}

// Args returns the flags that give a liqo-virtual-kubelet these options (only those that are
// not defaults, so that the defaults' command line stays as it was).
func (o *Options) Args() []string {
	var out []string
	for _, res := range objects.PolicyResources {
		if p := o.Policies.Of(res); p != objects.DenyList {
			out = append(out, "--"+PolicyFlag(res)+"="+string(p))
		}
	}
	if o.RemoteIngressClass != "" {
		out = append(out, "--"+FlagRemoteIngressClass+"="+o.RemoteIngressClass)
	}
	if o.DisableStorage {
		out = append(out, "--"+FlagEnableStorage+"=false")
	}
	if o.VirtualStorageClass != "" && o.VirtualStorageClass != consts.DefaultVirtualStorageClass {
		out = append(out, "--"+FlagVirtualStorageClass+"="+o.VirtualStorageClass)
	}
	if o.RemoteStorageClass != "" {
		out = append(out, "--"+FlagRemoteStorageClass+"="+o.RemoteStorageClass)
	}
	if o.APIServerSupport {
		out = append(out, "--"+FlagAPIServerSupport)
	}
	if o.HomeAPIServerHost != "" {
		out = append(out, "--"+FlagHomeAPIServerHost+"="+o.HomeAPIServerHost)
	}
	if o.HomeAPIServerPort != "" {
		out = append(out, "--"+FlagHomeAPIServerPort+"="+o.HomeAPIServerPort)
	}
	return out
}

// policyValue is the flag of one kind's policy.
type policyValue struct {
	policies objects.Policies
	resource string
}

// String is the policy, for the flag package.
func (v *policyValue) String() string {
	if v == nil || v.policies == nil {
		return string(objects.DenyList)
	}
	return string(v.policies.Of(v.resource))
}

// Set reads the policy, for the flag package.
func (v *policyValue) Set(s string) error {
	p, err := objects.ParsePolicy(s)
	if err != nil {
		return err
	}
	v.policies[v.resource] = p
	return nil
}
