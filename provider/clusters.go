package provider

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// reachTimeout bounds the first request to a cluster, so an unreachable API server fails the
// run quickly, with its host named.
const reachTimeout = 15 * time.Second

// Client-side rate limit of the provider's requests to one cluster, shared by every resource
// of a run (Terraform runs up to -parallelism operations at once, 10 by default, each polling
// its objects): client-go's default, 5 per second with bursts of 10, made a fleet's peerings
// queue behind each other in the plugin; the API server's own priority and fairness protects it.
const (
	clusterQPS   = 50
	clusterBurst = 100
)

// liqoGroupVersion is the API our resources need installed (any of our CRDs would do).
const liqoGroupVersion = "core.liqo.io/v1beta1"

// clusterSet holds the clusters a provider block can reach: its own connection (name "") and
// the entries of its clusters map. Clients are made on first use.
type clusterSet struct {
	scheme *runtime.Scheme
	own    *clusterEntry // nil when the block has no connection of its own
	named  map[string]*clusterEntry
	// unknownMap is set when the clusters map itself is not known yet.
	unknownMap bool
}

// clusterEntry is one cluster's connection and, once made, its client.
type clusterEntry struct {
	name string
	conn connectionModel
	// liqoNS is the namespace Liqo is installed in on the cluster.
	liqoNS string

	once   sync.Once
	client *clusterClient
	err    error

	crdOnce sync.Once
	crdErr  error
}

// clusterClient talks to one cluster.
type clusterClient struct {
	// name is the cluster's key in the clusters map, "" for the provider block's own connection.
	name string
	// host is the API server's URL.
	host string
	// config is the client configuration.
	config *rest.Config
	// ctrl is a controller-runtime client that knows our API types.
	ctrl client.Client
	// kube is a client-go clientset.
	kube kubernetes.Interface
	// liqoNS is the namespace Liqo is installed in on the cluster (liqo_namespace).
	liqoNS string
}

// peeringCluster is the cluster as one side of a peering, named in messages as name.
func (c *clusterClient) peeringCluster(name string) peering.Cluster {
	return peering.Cluster{Name: name, Client: c.ctrl, LiqoNamespace: c.liqoNS}
}

// describe names the cluster for messages.
func (c *clusterClient) describe() string {
	if c.name == "" {
		return fmt.Sprintf("the provider block's own cluster (%s)", c.host)
	}
	return fmt.Sprintf("cluster %q (%s)", c.name, c.host)
}

func (s *clusterSet) names() []string {
	out := make([]string, 0, len(s.named))
	for k := range s.named {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lookup finds the entry of a cluster key ("" for the provider block's own connection).
func (s *clusterSet) lookup(name string) (*clusterEntry, error) {
	if name == "" {
		if s.own != nil {
			return s.own, nil
		}
		if len(s.named) > 0 {
			return nil, fmt.Errorf("the provider block has no connection of its own: set `cluster` to one of %s, "+
				"or set `config_path`, `kubeconfig` or `host` in the provider block", quoteList(s.names()))
		}
		return nil, errors.New("the liqo provider has no connection: set `config_path`, `kubeconfig` or `host` " +
			"(with credentials) in the provider block, or a `clusters` map")
	}
	e, ok := s.named[name]
	if !ok && s.unknownMap {
		return nil, fmt.Errorf("the provider's `clusters` map is not known yet, so cluster %q cannot be used: "+
			"apply what it depends on first, or use -target", name)
	}
	if !ok {
		if len(s.named) == 0 {
			return nil, fmt.Errorf("cluster %q is not a key of the provider's `clusters` map, which is empty", name)
		}
		return nil, fmt.Errorf("cluster %q is not a key of the provider's `clusters` map (valid keys: %s)", name, quoteList(s.names()))
	}
	return e, nil
}

// pending tells whether the cluster named by a key ("" for the provider block's own
// connection) cannot be reached yet: its connection, or the clusters map holding it, depends on
// values known only after apply (a cluster created in the same run).
func (s *clusterSet) pending(name string) bool {
	if name == "" {
		return s.own != nil && s.own.conn.unknown()
	}
	e, ok := s.named[name]
	if !ok {
		return s.unknownMap
	}
	return e.conn.unknown()
}

// get returns the client of a cluster key, checking on first use that the API server answers.
func (s *clusterSet) get(ctx context.Context, name string) (*clusterClient, error) {
	e, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	e.once.Do(func() { e.client, e.err = e.connect(ctx, s.scheme) })
	return e.client, e.err
}

// getWithLiqo is get plus a check that our CRDs are installed in the cluster.
func (s *clusterSet) getWithLiqo(ctx context.Context, name string) (*clusterClient, error) {
	c, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	e, _ := s.lookup(name)
	e.crdOnce.Do(func() {
		_, err := c.kube.Discovery().ServerResourcesForGroupVersion(liqoGroupVersion)
		switch {
		case apierrors.IsNotFound(err):
			e.crdErr = fmt.Errorf("%s has no liqo API (%s): the liqo controllers are not installed there; "+
				"install them (or run `make sandbox` for local clusters)", c.describe(), liqoGroupVersion)
		case err != nil:
			e.crdErr = fmt.Errorf("checking the liqo API on %s: %w", c.describe(), err)
		}
	})
	return c, e.crdErr
}

func (e *clusterEntry) connect(ctx context.Context, scheme *runtime.Scheme) (*clusterClient, error) {
	who := "the provider block's own cluster"
	if e.name != "" {
		who = fmt.Sprintf("cluster %q", e.name)
	}
	if e.conn.unknown() {
		return nil, fmt.Errorf("the connection of %s is not known yet (it depends on a resource not created yet): "+
			"apply that resource first, or use -target", who)
	}
	cfg, err := e.conn.restConfig()
	if err != nil {
		return nil, fmt.Errorf("connection of %s: %w", who, err)
	}
	cfg.UserAgent = "terraform-provider-liqo"
	cfg.QPS, cfg.Burst = clusterQPS, clusterBurst
	// One token bucket for both clients below and every copy of cfg.
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(clusterQPS, clusterBurst)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection of %s (%s): %w", who, cfg.Host, err)
	}
	probeCtx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if err := kube.Discovery().RESTClient().Get().AbsPath("/version").Do(probeCtx).Error(); err != nil {
		return nil, fmt.Errorf("cannot reach the API server of %s at %s within %s: %w; check `host`/the kubeconfig and the network",
			who, cfg.Host, reachTimeout, err)
	}
	ctrl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connection of %s (%s): %w", who, cfg.Host, err)
	}
	return &clusterClient{name: e.name, host: cfg.Host, config: cfg, ctrl: ctrl, kube: kube, liqoNS: e.liqoNS}, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// newClusterSet makes the set from the provider block's own connection and its clusters map.
func newClusterSet(own connectionModel, named map[string]connectionModel) (*clusterSet, error) {
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, err
	}
	s := &clusterSet{scheme: scheme, named: map[string]*clusterEntry{}}
	liqoNS := func(c connectionModel, def string) string {
		if set(c.LiqoNamespace) {
			return c.LiqoNamespace.ValueString()
		}
		return def
	}
	ownNS := liqoNS(own, consts.LiqoNamespace)
	if !own.empty() || own.unknown() {
		s.own = &clusterEntry{conn: own, liqoNS: ownNS}
	}
	for name, conn := range named {
		s.named[name] = &clusterEntry{name: name, conn: conn, liqoNS: liqoNS(conn, ownNS)}
	}
	return s, nil
}

// deferral says why a change that needs the given clusters (keys, as attributes) must wait for
// a later plan: Terraform allows deferred changes (allowed) and one of them cannot be reached
// before apply, its key not known yet or its connection not known yet. None (the zero value):
// the change is planned now, with unknown values where the cluster is needed.
type deferral int

const (
	deferNone           deferral = iota
	deferConfigUnknown           // a cluster key is not known yet
	deferClusterUnknown          // a cluster's connection (or the clusters map) is not known yet
)

// deferral decides the deferral of a change that needs clusters.
func (s *clusterSet) deferral(allowed bool, clusters ...types.String) deferral {
	if !allowed {
		return deferNone
	}
	for _, c := range clusters {
		switch {
		case c.IsUnknown():
			return deferConfigUnknown
		case s.pending(c.ValueString()):
			return deferClusterUnknown
		}
	}
	return deferNone
}

// resource is the deferral of a managed resource's change; nil for none.
func (d deferral) resource() *resource.Deferred {
	switch d {
	case deferConfigUnknown:
		return &resource.Deferred{Reason: resource.DeferredReasonResourceConfigUnknown}
	case deferClusterUnknown:
		return &resource.Deferred{Reason: resource.DeferredReasonProviderConfigUnknown}
	}
	return nil
}

// dataSource is the deferral of a data source's read; nil for none.
func (d deferral) dataSource() *datasource.Deferred {
	switch d {
	case deferConfigUnknown:
		return &datasource.Deferred{Reason: datasource.DeferredReasonDataSourceConfigUnknown}
	case deferClusterUnknown:
		return &datasource.Deferred{Reason: datasource.DeferredReasonProviderConfigUnknown}
	}
	return nil
}
