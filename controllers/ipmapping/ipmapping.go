// Package ipmapping gives local addresses an address in the cluster's external CIDR, at which
// peers reach them through the tunnel (upstream Liqo v1.2's IP mapping), and records the
// API-server proxy as such an address (the in-band control plane).
//
//   - IPReconciler allocates status.ip of every ipam.liqo.io IP from the external CIDR: the
//     lowest free host address after the first, which upstream keeps for traffic of unknown
//     source. The gateways translate status.ip to spec.ip for what comes out of the tunnel.
//   - ProxyReconciler keeps the IP api-server-proxy in the Liqo namespace pointing at the
//     cluster IP of the proxy's Service there (label app.kubernetes.io/name=proxy), as upstream's
//     controller manager does at start; a peer's in-band identity dials that address's port
//     8118 through the tunnel.
package ipmapping

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// IPReconciler allocates the IPs' addresses in the external CIDR.
type IPReconciler struct {
	// Client reads and writes the cluster.
	Client client.Client
	// ExternalCIDR is the cluster's external CIDR (the controller manager's --external-cidr).
	ExternalCIDR string

	mu sync.Mutex
	// allocated remembers what this process allocated, by IP object, so that two reconciles
	// close together never hand out one address twice while the cache lags behind.
	allocated map[client.ObjectKey]string
}

// SetupWithManager registers the reconciler: every IP, one at a time (allocation reads all).
func (r *IPReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if _, err := ipv4Network(r.ExternalCIDR); err != nil {
		return fmt.Errorf("the IP controller (ipam.liqo.io IPs are IPv4): %w", err)
	}
	r.allocated = map[client.ObjectKey]string{}
	if err := ctrl.NewControllerManagedBy(mgr).Named("ipmapping-ip").For(&ipamv1alpha1.IP{}).Complete(r); err != nil {
		return fmt.Errorf("setting up the IP controller: %w", err)
	}
	return nil
}

// Reconcile gives the IP an address of the external CIDR unless it holds one no older IP
// holds.
func (r *IPReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ip := &ipamv1alpha1.IP{}
	if err := r.Client.Get(ctx, req.NamespacedName, ip); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ip.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	list := &ipamv1alpha1.IPList{}
	if err := r.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing IPs: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	addr, err := r.pick(ip, list.Items)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("IP %s: %w", req.NamespacedName, err)
	}
	r.allocated[req.NamespacedName] = addr
	if string(ip.Status.IP) == addr && string(ip.Status.CIDR) == r.ExternalCIDR {
		return reconcile.Result{}, nil
	}
	ip.Status.IP, ip.Status.CIDR = netv1beta1.IP(addr), netv1beta1.CIDR(r.ExternalCIDR)
	if err := r.Client.Status().Update(ctx, ip); err != nil {
		delete(r.allocated, req.NamespacedName)
		return reconcile.Result{}, fmt.Errorf("recording the address %s of IP %s: %w", addr, req.NamespacedName, err)
	}
	log.FromContext(ctx).Info("allocated an external address", "ip", req.NamespacedName, "local", ip.Spec.IP, "external", addr)
	return reconcile.Result{}, nil
}

// forget drops what this process allocated to a deleted IP.
func (r *IPReconciler) forget(key client.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.allocated, key)
}

// errExhausted says the external CIDR has no free address left.
var errExhausted = errors.New("no free address left")

// pick returns the address ip keeps or gets: its own, when it lies in the external CIDR, is
// not the reserved first address and no older IP holds it; otherwise the lowest free one.
func (r *IPReconciler) pick(ip *ipamv1alpha1.IP, all []ipamv1alpha1.IP) (string, error) {
	network, err := ipv4Network(r.ExternalCIDR)
	if err != nil {
		return "", err
	}
	key := client.ObjectKeyFromObject(ip)
	taken := map[string]client.ObjectKey{}
	slices.SortFunc(all, func(a, b ipamv1alpha1.IP) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for i := range all {
		k := client.ObjectKeyFromObject(&all[i])
		if a := string(all[i].Status.IP); a != "" && k != key {
			if _, held := taken[a]; !held {
				taken[a] = k
			}
		}
	}
	for k, a := range r.allocated {
		if k != key {
			taken[a] = k
		}
	}
	first, last := bounds(network)
	if own := net.ParseIP(string(ip.Status.IP)).To4(); own != nil && network.Contains(own) && !own.Equal(first) && !own.Equal(last) {
		holder, held := taken[own.String()]
		if !held || older(ip, holder, all) {
			return own.String(), nil
		}
	}
	if cached, ok := r.allocated[key]; ok {
		if _, held := taken[cached]; !held {
			return cached, nil
		}
	}
	for a := next(first); network.Contains(a) && !a.Equal(last); a = next(a) {
		if _, held := taken[a.String()]; !held {
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("%w in the external CIDR %s (%d IPs hold one): delete IPs no longer needed, or give the cluster a larger --external-cidr",
		errExhausted, r.ExternalCIDR, len(taken))
}

// older tells whether ip was made before the IP holder (creation time, then name).
func older(ip *ipamv1alpha1.IP, holder client.ObjectKey, all []ipamv1alpha1.IP) bool {
	for i := range all {
		if client.ObjectKeyFromObject(&all[i]) == holder {
			if c := ip.CreationTimestamp.Compare(all[i].CreationTimestamp.Time); c != 0 {
				return c < 0
			}
			return ip.Namespace+"/"+ip.Name < holder.Namespace+"/"+holder.Name
		}
	}
	return true // the holder is only in this process's memory, and gone from the cluster
}

// UnknownSourceIP is the external CIDR's first address, which upstream Liqo keeps for traffic
// of unknown source: never allocated.
func UnknownSourceIP(externalCIDR string) (string, error) {
	network, err := ipv4Network(externalCIDR)
	if err != nil {
		return "", err
	}
	first, _ := bounds(network)
	return first.String(), nil
}

// ipv4Network parses an IPv4 CIDR.
func ipv4Network(cidr string) (*net.IPNet, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("external CIDR %q: %w", cidr, err)
	}
	if n.IP.To4() == nil {
		return nil, fmt.Errorf("external CIDR %q is not an IPv4 CIDR", cidr)
	}
	return n, nil
}

// bounds returns the first and the last address of an IPv4 network.
func bounds(n *net.IPNet) (first, last net.IP) {
	first = n.IP.To4()
	last = make(net.IP, net.IPv4len)
	for i := range last {
		last[i] = first[i] | ^n.Mask[len(n.Mask)-net.IPv4len+i]
	}
	return first, last
}

// next returns the address after a.
func next(a net.IP) net.IP {
	n := new(big.Int).SetBytes(a.To4())
	n.Add(n, big.NewInt(1))
	b := n.Bytes()
	out := make(net.IP, net.IPv4len)
	copy(out[net.IPv4len-len(b):], b)
	return out
}
