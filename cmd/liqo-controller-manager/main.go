// Command liqo-controller-manager runs the in-cluster controllers of the peering. At start it
// ensures the cluster's identity (liqo namespace, cluster ID, signing key, Networks, CRDs,
// peer ClusterRoles); then it runs one reconciler per concern.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/configuration"
	"github.com/peerkit/terraform-provider-liqo/controllers/foreigncluster"
	"github.com/peerkit/terraform-provider-liqo/controllers/gatewayclient"
	"github.com/peerkit/terraform-provider-liqo/controllers/gatewayserver"
	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	"github.com/peerkit/terraform-provider-liqo/controllers/identity"
	"github.com/peerkit/terraform-provider-liqo/controllers/ipmapping"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespacemap"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespaceoffloading"
	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	"github.com/peerkit/terraform-provider-liqo/controllers/providernodes"
	"github.com/peerkit/terraform-provider-liqo/controllers/renew"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	"github.com/peerkit/terraform-provider-liqo/controllers/shadowendpointslice"
	"github.com/peerkit/terraform-provider-liqo/controllers/shadowpod"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	"github.com/peerkit/terraform-provider-liqo/controllers/tethering"
	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	"github.com/peerkit/terraform-provider-liqo/internal/api"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
	"github.com/peerkit/terraform-provider-liqo/internal/memlimit"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
)

func main() {
	cli.Exit("liqo-controller-manager", run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}

// options are the command's flags.
type options struct {
	cli.ManagerFlags
	identity     clusteridentity.Config
	apiServerURL string
	caData       []byte
	gatewayImage string
	proxyNS      string
	share        negotiation.Policy
	defaults     corev1.ResourceList
	qps          float64
	burst        int
	webhooks     webhookOptions
	vk           virtualKubeletOptions
	metering     meteringOptions
	lan          lanDiscoveryOptions
	market       marketOptions
	podSecurity  podsecurity.Policy
	// fabricRulePriority is the priority of the nodes' policy rules to the gateways.
	fabricRulePriority int
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("liqo-controller-manager", flag.ContinueOnError)
	fs.SetOutput(out)
	o.Bind(fs, "the cluster to run in")
	var clusterID string
	fs.StringVar(&clusterID, "cluster-id", "", "this cluster's ID, a DNS label (required the first time; it cannot change later)")
	fs.Var((*cidrList)(&o.identity.PodCIDRs), "pod-cidr", "the cluster's pod CIDR, e.g. 10.244.0.0/16; a cluster with several "+
		"(upstream Liqo's podCIDRs) repeats the flag or lists them separated by commas, and gets a Network per pod CIDR")
	fs.StringVar(&o.identity.ServiceCIDR, "service-cidr", "", "the cluster's service CIDR, e.g. 10.96.0.0/12")
	fs.StringVar(&o.identity.ExternalCIDR, "external-cidr", "", "the CIDR peers use to reach this cluster's external addresses "+
		"(default "+clusternet.DefaultExternalCIDR+", upstream Liqo's; as in upstream's chart, only a CIDR set here is labelled "+
		consts.NetworkNotRemappedLabel+"; peers remap it where it overlaps their networks)")
	fs.StringVar(&o.identity.InternalCIDR, "internal-cidr", "", "the network fabric's internal CIDR, from which each node and "+
		"gateway gets its tunnel address (default "+consts.DefaultInternalCIDR+", upstream Liqo's; it must not overlap the pod, "+
		"service or external CIDRs)")
	fs.IntVar(&o.fabricRulePriority, "route-configuration-rule-priority", 0, "priority of the policy rules of the nodes' routes "+
		"to the gateways (0: the fabric agent's own; upstream's flag)")
	fs.StringVar(&o.apiServerURL, "api-server-url", "", "the API server URL peers should use (default: the one this manager connects to)")
	fs.StringVar(&o.apiServerURL, "api-server-address-override", "", "upstream Liqo's name of --api-server-url (an address without scheme means https)")
	fs.StringVar(&o.identity.Namespace, "liqo-namespace", consts.LiqoNamespace, "the namespace Liqo is installed in: the cluster ID, "+
		"signing key, Networks, gateway templates, leader lease and webhook certificate are there (upstream's --liqo-namespace; liqoctl's --namespace)")
	fs.StringVar(&o.proxyNS, "api-server-proxy-namespace", "", "the namespace of the API-server proxy's Service (label "+
		consts.AppNameLabel+"="+consts.APIServerProxyApp+"; the chart's release namespace), whose cluster IP the IP "+consts.APIServerProxyIP+
		" in --liqo-namespace records for in-band peers (default: --liqo-namespace)")
	fs.StringVar(&o.gatewayImage, "gateway-image", "", "image of the gateway Deployments (default: the built-in one)")
	manageCRDs := fs.Bool("manage-crds", true, "install and upgrade our CRDs; false: only check that they exist (someone else installs them)")
	// client-go's own default (5 requests/s) would pace the ShadowPod controller's pod creations
	// and status writes to a crawl when a consumer scales a Deployment up.
	fs.Float64Var(&o.qps, "kube-api-qps", 100, "requests per second to the cluster's API server, sustained")
	fs.IntVar(&o.burst, "kube-api-burst", 200, "requests to the cluster's API server allowed in a burst above --kube-api-qps")
	var fixed string
	fs.Int64Var(&o.share.Percent, "share-percent", 50, "percent of the nodes' allocatable resources shared with consumers")
	fs.StringVar(&fixed, "share", "", "a fixed amount shared with consumers instead, e.g. cpu=8,memory=16Gi,pods=200")
	var defaults string
	fs.StringVar(&defaults, "default-node-resources", "cpu=4,memory=8Gi,pods=110,ephemeral-storage=20Gi",
		"granted to a slice for each resource it does not ask for (or what is left, if less); upstream Liqo's flag and defaults")
	podSecurity := fs.String(strings.TrimPrefix(podsecurity.Flag, "--"), consts.PodSecurityBaseline,
		"the Pod Security level (privileged, baseline or restricted) of the namespaces where consumers' offloaded pods run: "+
			"their remote namespaces are labelled with it, and ShadowPods whose pods it refuses are refused; a consumer's Tenant "+
			"annotated "+consts.TenantPodSecurityAnnotation+"=<level> gets that level instead")
	o.webhooks.bindFlags(fs)
	o.vk.bindFlags(fs)
	o.metering.bindFlags(fs)
	o.lan.bindFlags(fs)
	o.market.bindFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	o.identity.ClusterID = corev1beta1.ClusterID(clusterID)
	o.identity.CRDsInstalledElsewhere = !*manageCRDs
	level, err := podsecurity.ParseLevel(*podSecurity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", podsecurity.Flag, err)
	}
	o.podSecurity.Default = level
	if o.identity.ExternalCIDR == "" {
		// Upstream's chart's default; not the user's choice, so not marked not-remapped.
		o.identity.ExternalCIDR, o.identity.ExternalCIDRDefault = clusternet.DefaultExternalCIDR, true
	}
	if o.identity.InternalCIDR == "" {
		o.identity.InternalCIDR, o.identity.InternalCIDRDefault = consts.DefaultInternalCIDR, true
	}
	if o.qps <= 0 || o.burst < 1 {
		return nil, fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d must be positive", o.qps, o.burst)
	}
	if o.share.Percent < 1 || o.share.Percent > 100 {
		return nil, fmt.Errorf("--share-percent %d is not between 1 and 100", o.share.Percent)
	}
	if fixed != "" {
		list, err := parseResourceList(fixed)
		if err != nil {
			return nil, fmt.Errorf("--share: %w", err)
		}
		o.share.Fixed = list
	}
	if defaults != "" {
		list, err := parseResourceList(defaults)
		if err != nil {
			return nil, fmt.Errorf("--default-node-resources: %w", err)
		}
		o.defaults = list
	}
	if err := o.identity.Validate(); err != nil {
		return nil, err
	}
	if err := o.webhooks.validate(); err != nil {
		return nil, err
	}
	if err := o.vk.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := cli.RESTConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	return cfg, nil
}

// run parses args, ensures the cluster identity and runs the manager until ctx ends; with the
// uninstall subcommand first, it removes what the manager made instead.
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == uninstallCommand {
		return runUninstall(ctx, args[1:], out)
	}
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&o.Zap), zap.WriteTo(out))
	ctrl.SetLogger(log)
	memlimit.Apply(log)
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	direct, err := api.NewClient(cfg)
	if err != nil {
		return err
	}
	id, err := clusteridentity.Ensure(ctx, direct, o.identity)
	if err != nil {
		return fmt.Errorf("ensuring cluster identity: %w", err)
	}
	o.identity.ClusterID = id
	if err := workload.EnsureDefaultTemplates(ctx, direct, o.identity.LiqoNamespace()); err != nil {
		return fmt.Errorf("ensuring the default gateway templates: %w", err)
	}
	if err := ensureDefaultOffer(ctx, direct, o); err != nil {
		return err
	}
	log.Info("cluster identity in place", "clusterID", id, "apiServer", cfg.Host)

	mopts := o.ManagerOptions("liqo-controller-manager", o.identity.LiqoNamespace())
	mopts.Scheme, mopts.Logger = direct.Scheme(), log
	// A stopping leader gives the Lease up, so that another replica takes over at once rather
	// than when the Lease expires; safe because the process ends when run returns.
	mopts.LeaderElectionReleaseOnCancel = true
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if o.apiServerURL != "" && !strings.Contains(o.apiServerURL, "://") {
		o.apiServerURL = "https://" + o.apiServerURL
	}
	if o.apiServerURL == "" {
		o.apiServerURL = cfg.Host
	}
	o.caData = cfg.CAData
	if len(o.caData) == 0 && cfg.CAFile != "" {
		if o.caData, err = os.ReadFile(cfg.CAFile); err != nil {
			return fmt.Errorf("reading the API server's CA %s: %w", cfg.CAFile, err)
		}
	}
	if err := setup(mgr, o); err != nil {
		return err
	}
	if err := setupLANDiscovery(mgr, o); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// setupOffloading registers the reconcilers of namespace offloading: NamespaceOffloadings on
// the consumer, NamespaceMaps on the provider, and the tethered mode's NamespaceOffloadings.
func setupOffloading(mgr ctrl.Manager, o *options) error {
	if err := (&namespaceoffloading.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), LocalClusterID: o.identity.ClusterID}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NamespaceOffloading reconciler: %w", err)
	}
	if err := (&namespacemap.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-namespacemap"),
		PodSecurity: o.podSecurity}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NamespaceMap reconciler: %w", err)
	}
	// Always on: without the TetheringConfigMap it makes nothing.
	if err := (&tethering.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("liqo-tethering"),
		LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the tethering reconciler: %w", err)
	}
	return nil
}

// setup registers the reconcilers, one per concern.
func setup(mgr ctrl.Manager, o *options) error {
	if err := (&clusteridentity.Reconciler{Client: mgr.GetClient(), Config: o.identity}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the cluster identity reconciler: %w", err)
	}
	if err := (&foreigncluster.Reconciler{Client: mgr.GetClient(), LocalClusterID: o.identity.ClusterID}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ForeignCluster reconciler: %w", err)
	}
	if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the nonce reconciler: %w", err)
	}
	if err := (&nonce.ConsumerReconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the signed-nonce reconciler: %w", err)
	}
	if err := (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-tenant"),
		APIServerURL: o.apiServerURL, CAData: o.caData}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the tenant reconciler: %w", err)
	}
	if err := (&identity.Reconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the identity reconciler: %w", err)
	}
	if err := (&identity.SliceReconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ResourceSlice identity reconciler: %w", err)
	}
	if err := (&gatewayserver.Reconciler{Client: mgr.GetClient(), Image: o.gatewayImage, Recorder: mgr.GetEventRecorder("liqo-gatewayserver"),
		LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the gateway server reconciler: %w", err)
	}
	if err := (&gatewayclient.Reconciler{Client: mgr.GetClient(), Image: o.gatewayImage, Recorder: mgr.GetEventRecorder("liqo-gatewayclient"),
		LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the gateway client reconciler: %w", err)
	}
	if err := replication.NewResourceSliceReconciler(mgr.GetClient(), o.identity.ClusterID).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ResourceSlice replication reconciler: %w", err)
	}
	if err := replication.NewNamespaceMapReconciler(mgr.GetClient(), o.identity.ClusterID).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NamespaceMap replication reconciler: %w", err)
	}
	if err := setupOffloading(mgr, o); err != nil {
		return err
	}
	if err := setupMarket(mgr, o); err != nil {
		return err
	}
	if err := (&negotiation.Reconciler{Client: mgr.GetClient(), Policy: o.share, Defaults: o.defaults,
		APIServerURL: o.apiServerURL, CAData: o.caData, APIReader: mgr.GetAPIReader(), LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the negotiation reconciler: %w", err)
	}
	if err := (&renew.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-renew"),
		APIServerURL: o.apiServerURL, CAData: o.caData}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the renew reconciler: %w", err)
	}
	if err := (&providernodes.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the provider-nodes reconciler: %w", err)
	}
	if err := (&grantenforcement.CordonHold{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-slice-cordon")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the slice cordon hold: %w", err)
	}
	if err := (&shadowpod.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-shadowpod"),
		PodSecurity: o.podSecurity}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ShadowPod reconciler: %w", err)
	}
	if err := (&shadowendpointslice.Reconciler{Client: mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("liqo-shadowendpointslice")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ShadowEndpointSlice reconciler: %w", err)
	}
	if err := (&virtualnode.SliceReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the slice virtual-node reconciler: %w", err)
	}
	kube, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating clientset: %w", err)
	}
	if err := setupVirtualNodes(mgr, o, kube); err != nil {
		return err
	}
	var local []string
	// The internal CIDR too: a peer's CIDR inside it is remapped, or the fabric would route it.
	for _, c := range append(slices.Clone(o.identity.PodCIDRs), o.identity.ServiceCIDR, o.identity.ExternalCIDR, o.identity.InternalCIDR) {
		if c != "" {
			local = append(local, c)
		}
	}
	if err := (&configuration.Reconciler{Client: mgr.GetClient(), LocalCIDRs: local, LiqoNamespace: o.identity.LiqoNamespace()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the network configuration reconciler: %w", err)
	}
	if err := (&ipmapping.IPReconciler{Client: mgr.GetClient(), ExternalCIDR: o.identity.ExternalCIDR}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ipmapping.ProxyReconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace(),
		ServiceNamespace: o.proxyNS}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := setupFabric(mgr, o); err != nil {
		return err
	}
	return setupWebhooks(mgr, o.webhooks, o.identity.LiqoNamespace(), o.podSecurity)
}

// parseResourceList reads name=quantity pairs separated by commas (a trailing comma, as a
// chart's loop writes it, is fine).
func parseResourceList(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, pair := range strings.Split(strings.TrimSuffix(strings.TrimSpace(s), ","), ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not name=quantity", pair)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a quantity such as 4, 500m or 8Gi", name, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// cidrList is a flag that collects CIDRs: each use adds its value, which may list several
// separated by commas; an empty value adds none (as a chart's --pod-cidr= with no value says).
type cidrList []string

// String shows the CIDRs as one comma-separated value.
func (l *cidrList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// Set adds the CIDRs of one use of the flag (validated later, with the rest of the identity).
func (l *cidrList) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, c := range strings.Split(v, ",") {
		*l = append(*l, strings.TrimSpace(c))
	}
	return nil
}
