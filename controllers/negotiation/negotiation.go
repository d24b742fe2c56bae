package negotiation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/clientcert"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Reasons in the slices' conditions.
const (
	ReasonNoTenant      = "NoTenant"
	ReasonTenantActive  = "TenantActive"
	ReasonCordoned      = "TenantCordoned"
	ReasonDrained       = "TenantDrained"
	ReasonGranted       = "Granted"
	ReasonInsufficient  = "Insufficient"
	ReasonNotAuthorized = "NotAuthenticated"
	// ReasonNotTethered denies a slice of class consts.TetheredSliceClass whose consumer is not
	// the foreign cluster this cluster is tethered to.
	ReasonNotTethered = "NotTethered"
)

// Reconciler decides the slices in tenant namespaces.
type Reconciler struct {
	// Client reads and writes the provider cluster.
	Client client.Client
	// Policy is how much is shared.
	Policy Policy
	// Defaults are granted for the resources a slice does not name (upstream liqoctl asks for
	// none unless told to): each default, or what is left of it if less; a resource with
	// nothing left is not granted.
	Defaults corev1.ResourceList
	// APIServerURL is this cluster's API server as consumers reach it, and CAData the CA bundle
	// that signed its certificate: both go into the status.authParams of slices with a spec.csr.
	APIServerURL string
	// CAData is the CA bundle of the API server (see APIServerURL).
	CAData []byte
	// APIReader reads the TetheringConfigMap uncached (nil: Client), so that the manager does
	// not cache every ConfigMap of the cluster; the ConfigMaps are watched as metadata only.
	APIReader client.Reader
	// LiqoNamespace is the namespace Liqo is installed in, where consts.TetheringConfigMap says
	// which foreign cluster this cluster is tethered to ("": consts.LiqoNamespace).
	LiqoNamespace string
	// CertificateValidity, RenewBefore and MinRenewalInterval are how the slices' certificates
	// are requested and renewed, as the tenant controller's (clientcert.Issuer).
	CertificateValidity, RenewBefore, MinRenewalInterval time.Duration
}

// Reconcile decides one slice.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	slice := &authv1beta1.ResourceSlice{}
	if err := r.Client.Get(ctx, req.NamespacedName, slice); err != nil || slice.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if slice.Spec.ConsumerClusterID == nil || slice.Labels[consts.ReplicationLabel] == "true" {
		return reconcile.Result{}, nil // not a consumer's request (the consumer side of a peering)
	}
	if !Decides(slice.Spec.Class) {
		return reconcile.Result{}, nil // another class: its own controller decides it
	}
	consumer := string(*slice.Spec.ConsumerClusterID)
	tenant, err := clientcert.TenantOf(ctx, r.Client, slice.Namespace, consumer)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A slice holding a grant keeps it whatever it asks for next (its virtual node and pods run
	// on it): a new ask that cannot be granted leaves it in force (ResourceSliceGrantKept).
	holds := Condition(slice, authv1beta1.ResourceSliceConditionTypeResources) == authv1beta1.ResourceSliceConditionAccepted &&
		len(slice.Status.Resources) > 0
	accepted := holds && grantedAsAsked(slice, r.Defaults)

	if slice.Annotations[consts.ContractAnnotation] == "" {
		if err := r.markExpired(ctx, slice, false); err != nil { // no contract left to expire
			return reconcile.Result{}, err
		}
	}
	status := slice.Status.DeepCopy()
	auth, again, err := r.authenticate(ctx, slice, tenant, holds, status)
	if err != nil {
		return reconcile.Result{}, err
	}
	var res authv1beta1.ResourceSliceCondition
	var until time.Duration // when a contract starts or ends
	switch {
	case auth.Status == authv1beta1.ResourceSliceConditionDenied:
		res = cond(authv1beta1.ResourceSliceConditionTypeResources, false, ReasonNotAuthorized, auth.Message)
		status.Resources = nil
	case slice.Spec.Class == consts.TetheredSliceClass:
		if res, err = r.decideTethered(ctx, slice, tenant, holds, status); err != nil {
			return reconcile.Result{}, err
		}
	case slice.Annotations[consts.ContractAnnotation] != "":
		if res, until, err = r.decideContract(ctx, slice, tenant, status); err != nil {
			return reconcile.Result{}, err
		}
	case accepted:
		res = cond(authv1beta1.ResourceSliceConditionTypeResources, true, ReasonGranted, "granted")
	case tenant.Spec.TenantCondition == authv1beta1.TenantConditionCordoned:
		res = kept(slice, "the tenant is Cordoned: nothing more is granted")
	default:
		available, err := r.available(ctx, slice, r.Policy)
		if err != nil {
			return reconcile.Result{}, err
		}
		switch short := shortfall(slice.Spec.Resources, available); {
		case short != "" && holds:
			res = kept(slice, short)
		case short != "":
			res = cond(authv1beta1.ResourceSliceConditionTypeResources, false, ReasonInsufficient, short)
			status.Resources = nil
		default:
			res = cond(authv1beta1.ResourceSliceConditionTypeResources, true, ReasonGranted, "granted")
			status.Resources = withDefaults(slice.Spec.Resources, r.Defaults, available)
		}
	}
	if until > 0 && (again == 0 || until < again) {
		again = until
	}
	status.Conditions = merge(slice.Status.Conditions, auth, res)
	if equality.Semantic.DeepEqual(*status, slice.Status) {
		return reconcile.Result{RequeueAfter: again}, nil
	}
	before := slice.DeepCopy()
	slice.Status = *status
	if err := r.Client.Status().Patch(ctx, slice, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("deciding slice %s: %w", req, err)
	}
	return reconcile.Result{RequeueAfter: again}, nil
}

// authenticate is the Authentication condition of a slice of tenant (nil: none found), which
// holds a grant or not: accepted for an Active tenant (or a Cordoned one, for a slice holding a
// grant) and, when the slice has a spec.csr, a request its consumer may be issued a
// certificate for; status.authParams then gets it (sliceCertificate), and is emptied when the
// slice is denied. again is when to look again (the certificate being signed or due).
func (r *Reconciler) authenticate(ctx context.Context, slice *authv1beta1.ResourceSlice, tenant *authv1beta1.Tenant, holds bool,
	status *authv1beta1.ResourceSliceStatus) (auth authv1beta1.ResourceSliceCondition, again time.Duration, err error) {
	switch {
	case tenant == nil:
		auth = cond(authv1beta1.ResourceSliceConditionTypeAuthentication, false, ReasonNoTenant,
			fmt.Sprintf("no Tenant for cluster %s in namespace %s", *slice.Spec.ConsumerClusterID, slice.Namespace))
	case tenant.Spec.TenantCondition == authv1beta1.TenantConditionDrained:
		auth = cond(authv1beta1.ResourceSliceConditionTypeAuthentication, false, ReasonDrained, "the tenant is Drained: nothing is granted")
	case tenant.Spec.TenantCondition == authv1beta1.TenantConditionCordoned && !holds:
		auth = cond(authv1beta1.ResourceSliceConditionTypeAuthentication, false, ReasonCordoned, "the tenant is Cordoned: no new slices are accepted")
	default:
		auth = cond(authv1beta1.ResourceSliceConditionTypeAuthentication, true, ReasonTenantActive, "tenant "+tenant.Name)
	}
	if auth.Status == authv1beta1.ResourceSliceConditionAccepted && len(slice.Spec.CSR) > 0 {
		var refused string
		if status.AuthParams, again, refused, err = r.sliceCertificate(ctx, slice, tenant); err != nil {
			return auth, 0, err
		}
		if refused != "" {
			auth = cond(authv1beta1.ResourceSliceConditionTypeAuthentication, false, ReasonCSRInvalid, refused)
		}
	}
	if auth.Status == authv1beta1.ResourceSliceConditionDenied {
		status.AuthParams = nil
	}
	return auth, again, nil
}

// kept is the Resources condition of a slice that holds a grant and asks for something that
// is not granted (why): accepted still, the grant in force left in its status.
func kept(slice *authv1beta1.ResourceSlice, why string) authv1beta1.ResourceSliceCondition {
	return cond(authv1beta1.ResourceSliceConditionTypeResources, true, consts.ResourceSliceGrantKept,
		fmt.Sprintf("what ResourceSlice %s/%s asks for now is not granted (%s): the grant in force (status.resources) stays until an ask fits",
			slice.Namespace, slice.Name, why))
}

// Decides tells whether this controller decides the slices of a class: those that name none
// and the default class, as upstream Liqo's ResourceSlice controller does, and the tethered
// class (consts.TetheredSliceClass, decideTethered). A slice of another class is left
// untouched (no condition written) for the controller of its class.
func Decides(class authv1beta1.ResourceSliceClass) bool {
	return class == authv1beta1.ResourceSliceClassUnknown || class == authv1beta1.ResourceSliceClassDefault ||
		class == consts.TetheredSliceClass
}

// available is what policy shares minus what other slices were granted. Every accepted slice
// counts, whatever its class: a slice of another class accepted by its own controller runs on
// the same nodes this policy shares, so what it was granted is no longer there to give (the
// grant enforcement on ShadowPods sums the slices of every class too).
func (r *Reconciler) available(ctx context.Context, self *authv1beta1.ResourceSlice, policy Policy) (corev1.ResourceList, error) {
	shared, err := policy.Shared(ctx, r.Client)
	if err != nil {
		return nil, err
	}
	slices := &authv1beta1.ResourceSliceList{}
	if err := r.Client.List(ctx, slices); err != nil {
		return nil, fmt.Errorf("listing slices: %w", err)
	}
	for _, s := range slices.Items {
		if s.UID == self.UID || Condition(&s, authv1beta1.ResourceSliceConditionTypeResources) != authv1beta1.ResourceSliceConditionAccepted {
			continue
		}
		if s.Labels[consts.ReplicationLabel] == "true" {
			continue // this cluster's own request to another provider: granted by that one, not from here
		}
		for name, q := range s.Status.Resources {
			if left, ok := shared[name]; ok {
				left.Sub(q)
				shared[name] = left
			}
		}
	}
	return shared, nil
}

// withDefaults is what a slice asking for want is granted: want, and for each resource it does
// not name, the default or what is available of it if less (nothing when nothing is left).
func withDefaults(want, defaults, available corev1.ResourceList) corev1.ResourceList {
	out := want.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, d := range defaults {
		if _, asked := want[name]; asked {
			continue
		}
		left, ok := available[name]
		if !ok || left.Sign() <= 0 {
			continue
		}
		if d.Cmp(left) > 0 {
			d = left
		}
		out[name] = d
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// grantedAsAsked tells whether a slice's status grants exactly what its spec names and a
// quantity of each default resource it does not name (withDefaults' result, which depends on
// what was available when it was granted).
func grantedAsAsked(slice *authv1beta1.ResourceSlice, defaults corev1.ResourceList) bool {
	for name, q := range slice.Spec.Resources {
		if got, ok := slice.Status.Resources[name]; !ok || got.Cmp(q) != 0 {
			return false
		}
	}
	for name := range slice.Status.Resources {
		if _, asked := slice.Spec.Resources[name]; !asked {
			if _, isDefault := defaults[name]; !isDefault {
				return false
			}
		}
	}
	return true
}

// shortfall describes what of want does not fit in available, or "".
func shortfall(want, available corev1.ResourceList) string {
	var short []string
	for name, q := range want {
		left, ok := available[name]
		if !ok {
			left = resource.Quantity{}
		}
		if q.Cmp(left) > 0 {
			short = append(short, fmt.Sprintf("%s: asked %s, available %s", name, q.String(), left.String()))
		}
	}
	sort.Strings(short)
	return strings.Join(short, "; ")
}

// Condition is the status of the slice's condition of type t, "" when it has none.
func Condition(s *authv1beta1.ResourceSlice, t authv1beta1.ResourceSliceConditionType) authv1beta1.ResourceSliceConditionStatus {
	for _, c := range s.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func cond(t authv1beta1.ResourceSliceConditionType, ok bool, reason, msg string) authv1beta1.ResourceSliceCondition {
	s := authv1beta1.ResourceSliceConditionDenied
	if ok {
		s = authv1beta1.ResourceSliceConditionAccepted
	}
	return authv1beta1.ResourceSliceCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// merge sets the conditions, keeping the transition time of those whose status is unchanged.
func merge(old []authv1beta1.ResourceSliceCondition, conds ...authv1beta1.ResourceSliceCondition) []authv1beta1.ResourceSliceCondition {
	now := metav1.Now()
	out := make([]authv1beta1.ResourceSliceCondition, 0, len(conds))
	for _, c := range conds {
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// sharedNodeChanged passes the Node events that may change what Policy shares: a real node
// created or deleted, or its allocatable resources or schedulability changed (not heartbeats).
var sharedNodeChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		return e.Object.GetLabels()[consts.TypeLabel] != consts.VirtualNodeType
	},
	DeleteFunc: func(e event.DeleteEvent) bool {
		return e.Object.GetLabels()[consts.TypeLabel] != consts.VirtualNodeType
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*corev1.Node)
		n, okNew := e.ObjectNew.(*corev1.Node)
		if !okOld || !okNew || n.Labels[consts.TypeLabel] == consts.VirtualNodeType {
			return false
		}
		return o.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)
	},
}

// SetupWithManager watches slices, Tenants (a change of condition re-decides the slices of
// their namespace), the provider's copies of Contracts (re-deciding the slices naming them),
// and for the tethered slices (consts.TetheredSliceClass) the Nodes (their
// grant follows what the nodes offer) and the TetheringConfigMap (the tethering starting,
// ending or moving).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	newList := func() client.ObjectList { return &authv1beta1.ResourceSliceList{} }
	slicesOfNamespace := enqueue.Listed[*authv1beta1.ResourceSlice](mgr.GetClient(), newList, enqueue.InNamespaceOf(), nil)
	tetheredSlices := enqueue.Listed(mgr.GetClient(), newList, nil, func(_ client.Object, s *authv1beta1.ResourceSlice) bool {
		return s.Spec.Class == consts.TetheredSliceClass
	})
	tetheringConfigMap := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == consts.TetheringConfigMap && o.GetNamespace() == consts.LiqoNamespaceOr(r.LiqoNamespace)
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("negotiation").
		For(&authv1beta1.ResourceSlice{}).
		Watches(&authv1beta1.Tenant{}, slicesOfNamespace).
		Watches(&corev1.Node{}, tetheredSlices, builder.WithPredicates(sharedNodeChanged)).
		Watches(&corev1.ConfigMap{}, tetheredSlices, builder.WithPredicates(tetheringConfigMap), builder.OnlyMetadata).
		Watches(&marketv1alpha1.Contract{}, r.slicesOfContract(mgr.GetClient())).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the negotiation controller: %w", err)
	}
	return nil
}
