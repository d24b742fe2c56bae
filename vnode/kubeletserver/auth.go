package kubeletserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap where the API server publishes its client CA, and its key.
const (
	authConfigMapNamespace = "kube-system"
	authConfigMap          = "extension-apiserver-authentication"
	clientCAKey            = "client-ca-file"
)

// clientCA is the cluster's client CA, read again every refresh.
type clientCA struct {
	mu   sync.Mutex
	cas  *x509.CertPool
	pems string
}

func (c *clientCA) pool() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cas
}

// load reads the client CA; it keeps the previous one when the read fails.
func (c *clientCA) load(ctx context.Context, kube kubernetes.Interface) error {
	cm, err := kube.CoreV1().ConfigMaps(authConfigMapNamespace).Get(ctx, authConfigMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the cluster's client CA (ConfigMap %s/%s): %w", authConfigMapNamespace, authConfigMap, err)
	}
	pems := cm.Data[clientCAKey]
	if pems == "" {
		return fmt.Errorf("ConfigMap %s/%s has no %s: the API server does not authenticate client certificates, so nobody can reach the kubelet endpoint",
			authConfigMapNamespace, authConfigMap, clientCAKey)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pems == c.pems {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pems)) {
		return fmt.Errorf("ConfigMap %s/%s: %s holds no PEM certificate", authConfigMapNamespace, authConfigMap, clientCAKey)
	}
	c.cas, c.pems = pool, pems
	return nil
}

// startClientCA reads the client CA once, then every refresh until ctx ends.
func startClientCA(ctx context.Context, kube kubernetes.Interface, refresh time.Duration, log logr.Logger) (*clientCA, error) {
	c := &clientCA{}
	if err := c.load(ctx, kube); err != nil {
		return nil, err
	}
	go func() {
		t := time.NewTicker(refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.load(ctx, kube); err != nil && ctx.Err() == nil {
					log.Error(err, "keeping the previous client CA")
				}
			}
		}
	}()
	return c, nil
}

// authorizer lets through only requests the cluster authorizes on the node's kubelet API:
// verb get (GET) or create (POST, other methods by their verb) on nodes/proxy for the node, for
// the user and groups of the verified client certificate (CN and O).
type authorizer struct {
	next http.Handler
	kube kubernetes.Interface
	node string
	log  logr.Logger
}

// ServeHTTP authorizes then serves the request.
func (a *authorizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		http.Error(w, "Unauthorized: a client certificate of the cluster's client CA is required", http.StatusUnauthorized)
		return
	}
	subject := r.TLS.VerifiedChains[0][0].Subject
	verb := verbOf(r.Method)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: subject.CommonName, Groups: subject.Organization,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "nodes", Subresource: "proxy", Name: a.node},
	}}
	res, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		a.log.Error(err, "authorizing a kubelet API request", "user", subject.CommonName, "path", r.URL.Path)
		http.Error(w, "Internal Server Error: authorizing the request failed", http.StatusInternalServerError)
		return
	}
	if !res.Status.Allowed {
		a.log.V(1).Info("kubelet API request forbidden", "user", subject.CommonName, "verb", verb, "path", r.URL.Path)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)", subject.CommonName, verb), http.StatusForbidden)
		return
	}
	a.next.ServeHTTP(w, r)
}

// verbOf is the authorization verb of an HTTP method, as the kubelet maps it.
func verbOf(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	default:
		return "create"
	}
}

// queryKey keys the request's query in its context: virtual-kubelet's log options do not tell
// tailLines=0 from no tailLines.
type queryKey struct{}

func withQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), queryKey{}, r.URL.Query())))
	})
}

func queryOf(ctx context.Context) url.Values {
	q, _ := ctx.Value(queryKey{}).(url.Values)
	return q
}
