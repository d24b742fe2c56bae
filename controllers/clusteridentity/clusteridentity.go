// Package clusteridentity keeps a cluster's own identity in place: the liqo namespace, the
// cluster-ID ConfigMap, the Ed25519 signing key Secret, the Network objects of its CIDRs (with
// upstream Liqo's names and labels, built by package clusternet; the pod-cidr Network of an older
// version is replaced by its pod-cidr-<cidr> successor), our CRDs, the ClusterRoles that peers
// are bound to and the admission policy that keeps a consumer's Secret writes to its own copies.
// Ensure sets them up at start; the Reconciler repairs them when they drift (deleted or edited).
package clusteridentity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// Names of the objects this package keeps.
const (
	// RemoteControlPlaneClusterRole is what a consumer's identity is bound to in its tenant
	// namespace on the provider: resource slices, namespace maps and renews there, nothing else.
	RemoteControlPlaneClusterRole = "liqo-remote-controlplane"
	// RemoteWorkloadClusterRole is what a consumer's identity is bound to in each of its remote
	// namespaces on the provider: the objects a virtual kubelet reflects there, nothing else.
	RemoteWorkloadClusterRole = "liqo-remote-workload"
	// SliceWorkloadClusterRole is what the consumer's group (the organization of its
	// ResourceSlice certificates) is bound to in each of its remote namespaces on the provider:
	// upstream Liqo v1.2's name for the role its virtual kubelets use there
	// (peerrbac.SliceWorkloadRules).
	SliceWorkloadClusterRole = "liqo-virtual-kubelet-remote"
	// managedByLabel and managedBy mark the objects this package keeps.
	managedByLabel = consts.ManagedByLabel
	managedBy      = consts.ManagedByControllerManager
)

// Config is what a cluster knows of itself, from the controller manager's flags.
type Config struct {
	// ClusterID identifies the cluster to its peers. Empty: keep the one already recorded.
	ClusterID corev1beta1.ClusterID
	// PodCIDRs are the cluster's pod CIDRs (upstream Liqo v1.2's podCIDRs: one Network each),
	// none to skip them.
	PodCIDRs []string
	// ServiceCIDR and ExternalCIDR are the cluster's other networks; empty ones are skipped.
	ServiceCIDR, ExternalCIDR string
	// ExternalCIDRDefault says ExternalCIDR is the default (clusternet.DefaultExternalCIDR), the
	// user having set none: its Network is then not labelled not-remapped (upstream's chart).
	ExternalCIDRDefault bool
	// InternalCIDR is the network fabric's internal network (the manager's --internal-cidr;
	// empty: no Network), which must not overlap the other CIDRs; InternalCIDRDefault says it
	// is the default, the user having set none (its Network is then not labelled not-remapped).
	InternalCIDR        string
	InternalCIDRDefault bool
	// CRDsInstalledElsewhere says someone else installs and upgrades our CRDs (the manager's
	// --manage-crds=false): Ensure only checks that they are there.
	CRDsInstalledElsewhere bool
	// Namespace is the namespace Liqo is installed in (the manager's --liqo-namespace; "":
	// consts.LiqoNamespace): the cluster ID, the signing key and the Networks live there.
	Namespace string
}

// LiqoNamespace is the namespace Liqo is installed in.
func (c Config) LiqoNamespace() string { return consts.LiqoNamespaceOr(c.Namespace) }

// Validate checks the configuration before anything is written.
func (c Config) Validate() error {
	var errs []error
	if c.ClusterID != "" {
		if err := validClusterID(string(c.ClusterID)); err != nil {
			errs = append(errs, err)
		}
	}
	type flagValue struct{ flag, value string }
	values := []flagValue{{"--service-cidr", c.ServiceCIDR}, {"--external-cidr", c.ExternalCIDR}, {"--internal-cidr", c.InternalCIDR}}
	for _, v := range c.PodCIDRs {
		values = append(values, flagValue{"--pod-cidr", v})
	}
	var pods []netip.Prefix
	others := map[string][]netip.Prefix{}
	for _, v := range values {
		if v.value == "" && v.flag != "--pod-cidr" {
			continue
		}
		p, err := netip.ParsePrefix(v.value)
		if err != nil || p.Masked() != p {
			errs = append(errs, fmt.Errorf("%s %q is not a network CIDR such as 10.244.0.0/16", v.flag, v.value))
			continue
		}
		if v.flag == "--pod-cidr" {
			pods = append(pods, p)
		}
		others[v.flag] = append(others[v.flag], p)
	}
	errs = append(errs, overlappingPodCIDRs(pods)...)
	errs = append(errs, internalOverlaps(others)...)
	return errors.Join(errs...)
}

// overlappingPodCIDRs refuses pod CIDRs given twice or overlapping one another: each is a
// network of its own, with a Network of its own, routed and remapped on its own by peers.
func overlappingPodCIDRs(pods []netip.Prefix) []error {
	var errs []error
	for i := range pods {
		for j := range i {
			switch {
			case pods[i] == pods[j]:
				errs = append(errs, fmt.Errorf("--pod-cidr %s is given twice: give each pod CIDR once", pods[i]))
			case pods[i].Overlaps(pods[j]):
				errs = append(errs, fmt.Errorf("--pod-cidr %s and %s overlap: each pod CIDR is a network of its own; "+
					"give the larger one only, or CIDRs that do not overlap", pods[j], pods[i]))
			}
		}
	}
	return errs
}

// internalOverlaps refuses an internal CIDR that overlaps the pod, service or external CIDRs
// (cidrs by flag): the fabric routes the internal CIDR between nodes and gateways, so a pod,
// Service or remapped peer address inside it would be routed into a tunnel.
func internalOverlaps(cidrs map[string][]netip.Prefix) []error {
	var errs []error
	for _, internal := range cidrs["--internal-cidr"] {
		for _, flag := range []string{"--pod-cidr", "--service-cidr", "--external-cidr"} {
			for _, other := range cidrs[flag] {
				if internal.Overlaps(other) {
					errs = append(errs, fmt.Errorf("--internal-cidr %s overlaps %s %s: the network fabric's internal CIDR must be "+
						"a network of its own; choose another --internal-cidr (chart value internalCIDR, upstream's ipam.internalCIDR; default %s) "+
						"outside %s", internal, flag, other, consts.DefaultInternalCIDR, other))
				}
			}
		}
	}
	return errs
}

func validClusterID(id string) error {
	if len(id) == 0 || len(id) > 63 {
		return fmt.Errorf("cluster ID %q must be 1 to 63 characters", id)
	}
	for i, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(id)-1
		if !ok {
			return fmt.Errorf("cluster ID %q is not a DNS label (lower-case letters, digits, '-' inside)", id)
		}
	}
	return nil
}

// Ensure creates what is missing and repairs what drifted. It returns the cluster ID in use.
// The cluster ID and the signing key are never replaced once recorded: peers know them.
func Ensure(ctx context.Context, c client.Client, cfg Config) (corev1beta1.ClusterID, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if cfg.CRDsInstalledElsewhere {
		if err := crds.Check(ctx, c); err != nil {
			return "", err
		}
	} else if err := crds.Install(ctx, c); err != nil {
		return "", err
	}
	liqoNS := cfg.LiqoNamespace()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: liqoNS}}
	if _, err := controllerutil.CreateOrPatch(ctx, c, ns, func() error { return nil }); err != nil {
		return "", fmt.Errorf("ensuring namespace %s: %w", liqoNS, err)
	}
	id, err := ensureClusterID(ctx, c, liqoNS, cfg.ClusterID)
	if err != nil {
		return "", err
	}
	if err := ensureSigningKey(ctx, c, liqoNS); err != nil {
		return "", err
	}
	if err := ensureNetworks(ctx, c, cfg); err != nil {
		return "", err
	}
	if err := ensureClusterRoles(ctx, c); err != nil {
		return "", err
	}
	if err := ensureSlicePolicy(ctx, c); err != nil {
		return "", err
	}
	if err := ensureContractPolicy(ctx, c); err != nil {
		return "", err
	}
	if err := ensureSecretPolicy(ctx, c); err != nil {
		return "", err
	}
	return id, nil
}

// clusterIDConfigMapLabels are how upstream Liqo's tools find the cluster-ID ConfigMap.
var clusterIDConfigMapLabels = map[string]string{consts.AppNameLabel: consts.ClusterIDConfigMapApp, consts.AppComponentLabel: consts.ClusterIDConfigMapApp}

// labelClusterIDConfigMap adds clusterIDConfigMapLabels to a ConfigMap recorded without them.
func labelClusterIDConfigMap(ctx context.Context, c client.Client, cm *corev1.ConfigMap) error {
	missing := false
	for k, v := range clusterIDConfigMapLabels {
		missing = missing || cm.Labels[k] != v
	}
	if !missing {
		return nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	maps.Copy(cm.Labels, clusterIDConfigMapLabels)
	if err := c.Patch(ctx, cm, patch); err != nil {
		return fmt.Errorf("labelling %s/%s: %w", cm.Namespace, consts.ClusterIDConfigMap, err)
	}
	return nil
}

func ensureClusterID(ctx context.Context, c client.Client, liqoNS string, want corev1beta1.ClusterID) (corev1beta1.ClusterID, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: liqoNS, Name: consts.ClusterIDConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		if want == "" {
			return "", fmt.Errorf("no cluster ID recorded in %s/%s: set --cluster-id", liqoNS, consts.ClusterIDConfigMap)
		}
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: consts.ClusterIDConfigMap, Labels: map[string]string{managedByLabel: managedBy}},
			Data:       map[string]string{consts.ClusterIDKey: string(want)},
		}
		maps.Copy(cm.Labels, clusterIDConfigMapLabels)
		if err := c.Create(ctx, cm); err != nil {
			return "", fmt.Errorf("recording cluster ID in %s/%s: %w", liqoNS, consts.ClusterIDConfigMap, err)
		}
		return want, nil
	case err != nil:
		return "", fmt.Errorf("reading %s/%s: %w", liqoNS, consts.ClusterIDConfigMap, err)
	}
	if err := labelClusterIDConfigMap(ctx, c, cm); err != nil {
		return "", err
	}
	got := corev1beta1.ClusterID(cm.Data[consts.ClusterIDKey])
	switch {
	case got == "" && want == "":
		return "", fmt.Errorf("%s/%s has no %s: set --cluster-id", liqoNS, consts.ClusterIDConfigMap, consts.ClusterIDKey)
	case got == "":
		patch := client.MergeFrom(cm.DeepCopy())
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[consts.ClusterIDKey] = string(want)
		if err := c.Patch(ctx, cm, patch); err != nil {
			return "", fmt.Errorf("recording cluster ID in %s/%s: %w", liqoNS, consts.ClusterIDConfigMap, err)
		}
		return want, nil
	case want != "" && got != want:
		return "", fmt.Errorf("this cluster's ID is %q (recorded in %s/%s), not %q: a cluster ID cannot change, since peers know it; "+
			"drop --cluster-id or set it to %q", got, liqoNS, consts.ClusterIDConfigMap, want, got)
	}
	return got, nil
}

func ensureSigningKey(ctx context.Context, c client.Client, liqoNS string) error {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: liqoNS, Name: consts.SigningKeySecret}, secret)
	if err == nil {
		if _, perr := signing.ParsePrivate(secret.Data[consts.PrivateKeySecretKey]); perr != nil {
			return fmt.Errorf("secret %s/%s does not hold a valid signing key (%w): delete it to make a new one, "+
				"knowing that peers must then re-authenticate", liqoNS, consts.SigningKeySecret, perr)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading secret %s/%s: %w", liqoNS, consts.SigningKeySecret, err)
	}
	key, err := signing.Generate()
	if err != nil {
		return err
	}
	priv, err := key.EncodePrivate()
	if err != nil {
		return err
	}
	pub, err := key.EncodePublic()
	if err != nil {
		return err
	}
	secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: consts.SigningKeySecret, Labels: map[string]string{managedByLabel: managedBy}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{consts.PrivateKeySecretKey: priv, consts.PublicKeySecretKey: pub},
	}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating secret %s/%s: %w", liqoNS, consts.SigningKeySecret, err)
	}
	return nil
}

// legacyPodCIDRNetwork is the name previous versions gave the pod CIDR Network (after its type;
// upstream's chart names it so only from its deprecated ipam.podCIDR value).
const legacyPodCIDRNetwork = "pod-cidr"

// cidrFlags name the controller manager's flag of each Network type, for error messages.
var cidrFlags = map[string]string{
	consts.PodCIDRNetwork: "--pod-cidr", consts.ServiceCIDRNetwork: "--service-cidr", consts.ExternalCIDRNetwork: "--external-cidr",
	consts.InternalCIDRNetwork: "--internal-cidr",
}

// ensureNetworks writes the Networks of the cluster's CIDRs as package clusternet builds them
// (upstream's names and labels: one per pod CIDR) and reports each CIDR in its status: the
// cluster's own networks are used as they are. The pod CIDR Network of a previous version
// (named pod-cidr) is replaced: the new one is created first, so that a pod-cidr Network always
// exists, then the old one, holding the same CIDR, is deleted. A pod CIDR recorded but no longer
// configured is refused, as another CIDR is for the other types; a pod CIDR added to the
// recorded ones gets its Network.
func ensureNetworks(ctx context.Context, c client.Client, cfg Config) error {
	spec := clusternet.Spec{PodCIDRs: cfg.PodCIDRs, ServiceCIDR: cfg.ServiceCIDR, ExternalCIDR: cfg.ExternalCIDR,
		ExternalCIDRDefaulted: cfg.ExternalCIDRDefault, InternalCIDR: cfg.InternalCIDR, InternalCIDRDefaulted: cfg.InternalCIDRDefault,
		Namespace: cfg.LiqoNamespace()}
	if len(cfg.PodCIDRs) > 0 {
		if err := checkPodCIDRs(ctx, c, cfg.LiqoNamespace(), cfg.PodCIDRs); err != nil {
			return err
		}
	}
	for _, want := range spec.Networks() {
		if err := ensureNetwork(ctx, c, want, cfg.ExternalCIDRDefault); err != nil {
			return err
		}
	}
	if len(cfg.PodCIDRs) > 0 {
		return retireLegacyPodCIDRNetwork(ctx, c, cfg.LiqoNamespace(), cfg.PodCIDRs)
	}
	return nil
}

// checkPodCIDRs refuses pod CIDRs that leave out one of the pod CIDR Networks already written
// (by this package, whatever their names): its Network's name follows the CIDR, so a changed
// flag would otherwise drop a pod CIDR and add another under the peers' feet. Networks of
// others (e.g. upstream's chart) are left to them.
func checkPodCIDRs(ctx context.Context, c client.Client, liqoNS string, cidrs []string) error {
	nets, err := clusternet.ListIn(ctx, c, liqoNS)
	if err != nil {
		return err
	}
	not := cidrs[0]
	if len(cidrs) > 1 {
		not = "one of " + strings.Join(cidrs, ", ")
	}
	for _, n := range clusternet.Own(nets, consts.PodCIDRNetwork) {
		if n.Labels[managedByLabel] == managedBy && !slices.Contains(cidrs, string(n.Spec.CIDR)) {
			return fmt.Errorf("network %s/%s has pod CIDR %s, not %s: a cluster's CIDR cannot change under its peers; "+
				"fix the flag (--pod-cidr; it takes several, so keep %s and add others), or delete the Network after unpeering",
				n.Namespace, n.Name, n.Spec.CIDR, not, n.Spec.CIDR)
		}
	}
	return nil
}

// ensureNetwork creates want (adding our managed-by label) or brings an existing Network of its
// name to want's labels, and reports its CIDR in status.cidr. A Network of the name with another
// CIDR is refused: spec.cidr cannot change, and a cluster's CIDR must not under its peers.
func ensureNetwork(ctx context.Context, c client.Client, want *ipamv1alpha1.Network, externalDefault bool) error {
	typ := want.Labels[consts.NetworkTypeLabel]
	cidr := string(want.Spec.CIDR)
	n := &ipamv1alpha1.Network{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), n)
	switch {
	case apierrors.IsNotFound(err):
		n = want.DeepCopy()
		n.Labels[managedByLabel] = managedBy
		if err := c.Create(ctx, n); err != nil {
			return fmt.Errorf("creating network %s/%s: %w", n.Namespace, n.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading network %s/%s: %w", want.Namespace, want.Name, err)
	case string(n.Spec.CIDR) != cidr:
		flag := cidrFlags[typ]
		if typ == consts.ExternalCIDRNetwork && externalDefault {
			flag += ", empty, hence the default " + cidr
		}
		return fmt.Errorf("network %s/%s has CIDR %s, not %s: a cluster's CIDR cannot change under its peers; "+
			"fix the flag (%s), or delete the Network after unpeering", n.Namespace, n.Name, n.Spec.CIDR, cidr, flag)
	default:
		if err := relabelNetwork(ctx, c, n, want.Labels); err != nil {
			return err
		}
	}
	if string(n.Status.CIDR) != cidr {
		patch := client.MergeFrom(n.DeepCopy())
		n.Status.CIDR = netv1beta1.CIDR(cidr) // the cluster's own networks are used as they are
		if err := c.Status().Patch(ctx, n, patch); err != nil {
			return fmt.Errorf("reporting network %s/%s: %w", n.Namespace, n.Name, err)
		}
	}
	return nil
}

// relabelNetwork gives n the labels of clusternet.LabelKeys exactly as in want (set or absent)
// and our managed-by label, keeping its others: a Network written by a previous version (the
// type label only) or by upstream's chart is adopted.
func relabelNetwork(ctx context.Context, c client.Client, n *ipamv1alpha1.Network, want map[string]string) error {
	labels := maps.Clone(n.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range clusternet.LabelKeys() {
		if v, ok := want[k]; ok {
			labels[k] = v
		} else {
			delete(labels, k)
		}
	}
	labels[managedByLabel] = managedBy
	if maps.Equal(labels, n.Labels) {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Labels = labels
	if err := c.Patch(ctx, n, patch); err != nil {
		return fmt.Errorf("labelling network %s/%s: %w", n.Namespace, n.Name, err)
	}
	return nil
}

// retireLegacyPodCIDRNetwork deletes the pod CIDR Network a previous version wrote (named
// pod-cidr, with our managed-by label and one of the pod CIDRs cidrs, which its successor named
// after the CIDR now holds). One written by others is left alone and still counts as a pod CIDR.
func retireLegacyPodCIDRNetwork(ctx context.Context, c client.Client, liqoNS string, cidrs []string) error {
	n := &ipamv1alpha1.Network{}
	err := c.Get(ctx, client.ObjectKey{Namespace: liqoNS, Name: legacyPodCIDRNetwork}, n)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading network %s/%s: %w", liqoNS, legacyPodCIDRNetwork, err)
	}
	cidr := string(n.Spec.CIDR)
	if n.Labels[managedByLabel] != managedBy || !slices.Contains(cidrs, cidr) || !n.DeletionTimestamp.IsZero() ||
		consts.PodCIDRNetworkName(cidr) == legacyPodCIDRNetwork { // cannot happen for a valid CIDR; never delete the current one
		return nil
	}
	if err := c.Delete(ctx, n, client.Preconditions{UID: &n.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting network %s/%s, replaced by %s: %w", liqoNS, legacyPodCIDRNetwork, consts.PodCIDRNetworkName(cidr), err)
	}
	return nil
}

func ensureClusterRoles(ctx context.Context, c client.Client) error {
	for name, rules := range map[string][]rbacv1.PolicyRule{
		RemoteControlPlaneClusterRole: peerrbac.ControlPlaneRules(),
		RemoteWorkloadClusterRole:     peerrbac.WorkloadRules(),
		SliceWorkloadClusterRole:      peerrbac.SliceWorkloadRules(),
	} {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := controllerutil.CreateOrPatch(ctx, c, role, func() error {
			setManaged(&role.ObjectMeta)
			role.Rules = rules
			return nil
		})
		if err != nil {
			return fmt.Errorf("ensuring ClusterRole %s: %w", name, err)
		}
	}
	return nil
}
