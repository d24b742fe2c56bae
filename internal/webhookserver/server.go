// Package webhookserver serves the controller manager's admission webhooks over HTTPS with a
// certificate the manager provisions itself, and registers them with the API server.
//
// The certificate: a self-signed CA and a serving certificate signed by it, kept in a Secret
// (by default liqo/liqo-webhook-certificate) so that a restarted manager, and every replica,
// serve with the same certificate. A missing, unreadable or ending certificate is replaced;
// when only the serving certificate is at fault it is renewed under the same CA, so the
// caBundle the API server trusts does not change. Alternatively the Secret is provided by
// someone else (Options.SecretProvided, e.g. cert-manager): then it is only read.
//
// The registration: the Mutating- and ValidatingWebhookConfigurations the concern packages
// describe (controllers/podplacement, controllers/grantenforcement), with the CA as caBundle
// and a client configuration that reaches this server: a Service in a real cluster, or a URL
// for a manager running as a local process next to its API server (tests, the sandbox).
// The certificate and the configurations are checked again periodically (repairing drift and
// renewing the certificate before it ends); the configurations are never deleted, so that a
// restart does not open a window without admission control.
package webhookserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// DefaultSecretName is the default name of the certificate Secret, in consts.LiqoNamespace.
const DefaultSecretName = "liqo-webhook-certificate" //nolint:gosec // a Secret's name, not a credential

// DefaultBindAddress is where the webhook server listens by default.
const DefaultBindAddress = ":9443"

// Options say how the API server reaches the webhook server and where its certificate lives.
// Exactly one of Service and URL is set.
type Options struct {
	// Service is the Service that routes ServicePort to this server (in a real cluster).
	Service *types.NamespacedName
	// ServicePort is the Service's port. Default 443.
	ServicePort int32
	// URL is the https base URL the API server calls instead, e.g. https://127.0.0.1:9443 (a
	// manager running outside the cluster). Each webhook's path is appended to it.
	URL string
	// BindAddress is the host:port the server listens on. Default DefaultBindAddress.
	BindAddress string
	// SecretNamespace and SecretName name the certificate Secret. Defaults: consts.LiqoNamespace
	// and DefaultSecretName.
	SecretNamespace, SecretName string
	// SecretProvided says someone else keeps the certificate Secret (e.g. cert-manager): a
	// kubernetes.io/tls Secret with tls.crt and tls.key, and ca.crt for the webhook
	// configurations' caBundle (without it, the API server trusts its system roots). The server
	// reads it, serves its certificate and picks up a renewal at the next check, and never
	// writes it.
	SecretProvided bool
	// CheckInterval is how often the certificate and the configurations are checked again.
	// Default one hour.
	CheckInterval time.Duration
}

// ParseService reads a "namespace/name" Service reference.
func ParseService(s string) (*types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%q is not namespace/name, e.g. liqo/liqo-webhook", s)
	}
	return &types.NamespacedName{Namespace: ns, Name: name}, nil
}

// Server is the webhook server of the manager. Add it to a manager (it is a Runnable that
// does not need leader election: every replica serves).
type Server struct {
	opts   Options
	client client.Client
	hosts  []string
	inner  webhook.Server

	cert       atomic.Pointer[tls.Certificate]
	mu         sync.Mutex
	caBundle   []byte
	mutating   webhooksOfKind[admissionregistrationv1.MutatingWebhook, *admissionregistrationv1.MutatingWebhook]
	validating webhooksOfKind[admissionregistrationv1.ValidatingWebhook, *admissionregistrationv1.ValidatingWebhook]
}

// hook is a webhook and the path it is served at on this server.
type hook[W any] struct {
	path    string
	webhook W
}

// webhooksOfKind are the webhooks of one kind (W is a MutatingWebhook or a ValidatingWebhook),
// by the name of the configuration that holds them, and how a configuration of that kind is
// written.
type webhooksOfKind[W any, PW interface {
	*W
	DeepCopy() *W
}] struct {
	byConfiguration map[string][]hook[W]
	// clientConfig returns where w says how the API server reaches it.
	clientConfig func(w PW) *admissionregistrationv1.WebhookClientConfig
	// emptyConfiguration returns a configuration of this kind named name, and its webhooks.
	emptyConfiguration func(name string) (client.Object, *[]W)
}

// mutatingWebhooks is the kind of the MutatingWebhookConfigurations (without webhooks yet).
var mutatingWebhooks = webhooksOfKind[admissionregistrationv1.MutatingWebhook, *admissionregistrationv1.MutatingWebhook]{
	clientConfig: func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
		return &w.ClientConfig
	},
	emptyConfiguration: func(name string) (client.Object, *[]admissionregistrationv1.MutatingWebhook) {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		return cfg, &cfg.Webhooks
	},
}

// validatingWebhooks is the kind of the ValidatingWebhookConfigurations (without webhooks yet).
var validatingWebhooks = webhooksOfKind[admissionregistrationv1.ValidatingWebhook, *admissionregistrationv1.ValidatingWebhook]{
	clientConfig: func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
		return &w.ClientConfig
	},
	emptyConfiguration: func(name string) (client.Object, *[]admissionregistrationv1.ValidatingWebhook) {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		return cfg, &cfg.Webhooks
	},
}

// add adds wh, served at path, to the configuration named configuration.
func (k *webhooksOfKind[W, PW]) add(configuration, path string, wh W) {
	if k.byConfiguration == nil {
		k.byConfiguration = map[string][]hook[W]{}
	}
	k.byConfiguration[configuration] = append(k.byConfiguration[configuration], hook[W]{path, wh})
}

// desired returns, by configuration name, copies of the webhooks, each reached through the
// client configuration clientConfig gives for its path.
func (k *webhooksOfKind[W, PW]) desired(clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) map[string][]W {
	desired := map[string][]W{}
	for name, hooks := range k.byConfiguration {
		for i := range hooks {
			wh := PW(&hooks[i].webhook).DeepCopy()
			*k.clientConfig(wh) = clientConfig(hooks[i].path)
			desired[name] = append(desired[name], *wh)
		}
	}
	return desired
}

// write creates or updates each configuration of desired so that it holds exactly its webhooks.
func (k *webhooksOfKind[W, PW]) write(ctx context.Context, s *Server, desired map[string][]W) error {
	for name, hooks := range desired {
		cfg, webhooks := k.emptyConfiguration(name)
		err := s.apply(ctx, cfg, func() bool {
			if equality.Semantic.DeepEqual(*webhooks, hooks) {
				return false
			}
			*webhooks = hooks
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// New returns a server for opts. c must read without a cache (it reads one Secret and the
// webhook configurations, before and after the manager's caches start): pass a client made
// with client.New, not the manager's.
func New(c client.Client, opts Options) (*Server, error) {
	if (opts.Service == nil) == (opts.URL == "") {
		return nil, errors.New("webhook server: set exactly one of a Service (--webhook-service) and a URL (--webhook-url)")
	}
	if opts.ServicePort == 0 {
		opts.ServicePort = 443
	}
	if opts.BindAddress == "" {
		opts.BindAddress = DefaultBindAddress
	}
	if opts.SecretNamespace == "" {
		opts.SecretNamespace = consts.LiqoNamespace
	}
	if opts.SecretName == "" {
		opts.SecretName = DefaultSecretName
	}
	if opts.CheckInterval == 0 {
		opts.CheckInterval = time.Hour
	}
	host, portStr, err := net.SplitHostPort(opts.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("webhook bind address %q is not host:port: %w", opts.BindAddress, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("webhook bind address %q: port %q is not a number between 1 and 65535", opts.BindAddress, portStr)
	}
	s := &Server{opts: opts, client: c, mutating: mutatingWebhooks, validating: validatingWebhooks}
	if opts.Service != nil {
		svc := opts.Service
		s.hosts = []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local",
			svc.Name + "." + svc.Namespace, svc.Name}
	} else {
		u, err := url.Parse(opts.URL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("webhook URL %q is not an https URL without query, e.g. https://127.0.0.1:9443", opts.URL)
		}
		s.hosts = []string{u.Hostname()}
	}
	s.inner = webhook.NewServer(webhook.Options{Host: host, Port: port, TLSOpts: []func(*tls.Config){func(cfg *tls.Config) {
		cfg.MinVersion = tls.VersionTLS12
		cfg.GetCertificate = s.getCertificate
	}}})
	return s, nil
}

// Register serves handler at path.
func (s *Server) Register(path string, handler admission.Handler) {
	s.inner.Register(path, &webhook.Admission{Handler: handler})
}

// AddMutating adds a webhook, served at path, to the MutatingWebhookConfiguration named
// configuration. The server fills in its client configuration.
func (s *Server) AddMutating(configuration, path string, wh admissionregistrationv1.MutatingWebhook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutating.add(configuration, path, wh)
}

// AddValidating adds a webhook, served at path, to the ValidatingWebhookConfiguration named
// configuration. The server fills in its client configuration.
func (s *Server) AddValidating(configuration, path string, wh admissionregistrationv1.ValidatingWebhook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validating.add(configuration, path, wh)
}

// NeedLeaderElection is false: every replica serves webhooks.
func (s *Server) NeedLeaderElection() bool { return false }

// StartedChecker is a readiness check: it passes once the server accepts TLS connections.
func (s *Server) StartedChecker() healthz.Checker { return s.inner.StartedChecker() }

// CABundle returns the PEM CA the webhook configurations trust (empty before Start).
func (s *Server) CABundle() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.caBundle...)
}

// Start provisions the certificate, registers the webhooks with the API server and serves
// them until ctx ends; it checks the certificate and configurations again every
// CheckInterval.
func (s *Server) Start(ctx context.Context) error {
	if err := s.sync(ctx); err != nil {
		return err
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := s.sync(ctx); err != nil {
			log.FromContext(ctx).Error(err, "checking the webhook certificate and configurations")
		}
	}, s.opts.CheckInterval)
	if err := s.inner.Start(ctx); err != nil {
		return fmt.Errorf("serving webhooks on %s: %w", s.opts.BindAddress, err)
	}
	return nil
}

func (s *Server) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := s.cert.Load()
	if c == nil {
		return nil, errors.New("no webhook serving certificate yet")
	}
	return c, nil
}

// sync ensures the certificate Secret, loads it, and ensures the webhook configurations.
func (s *Server) sync(ctx context.Context) error {
	data, err := s.ensureSecret(ctx)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(data[TLSCertKey], data[TLSKeyKey])
	if err != nil {
		return fmt.Errorf("loading the webhook serving certificate of Secret %s/%s: %w", s.opts.SecretNamespace, s.opts.SecretName, err)
	}
	s.cert.Store(&pair)
	s.mu.Lock()
	s.caBundle = append([]byte(nil), data[CACertKey]...)
	s.mu.Unlock()
	return s.ensureConfigurations(ctx)
}

// ensureSecret returns valid certificates from the Secret, creating or repairing it first
// (only reading it when it is provided). Replicas racing to create or repair it converge on
// whichever write wins.
func (s *Server) ensureSecret(ctx context.Context) (map[string][]byte, error) {
	key := client.ObjectKey{Namespace: s.opts.SecretNamespace, Name: s.opts.SecretName}
	if s.opts.SecretProvided {
		return s.providedSecret(ctx, key)
	}
	for attempt := 0; ; attempt++ {
		secret := &corev1.Secret{}
		err := s.client.Get(ctx, key, secret)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the webhook certificate Secret %s: %w", key, err)
		}
		exists := err == nil
		data, changed, err := certificates(secret.Data, s.hosts, time.Now())
		if err != nil {
			return nil, err
		}
		if !changed {
			return data, nil
		}
		if exists {
			secret.Data = data
			err = s.client.Update(ctx, secret)
		} else {
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "liqo-controller-manager"}},
				Type: corev1.SecretTypeTLS, Data: data}
			err = s.client.Create(ctx, secret)
		}
		switch {
		case err == nil:
			log.FromContext(ctx).Info("webhook certificate written", "secret", key, "hosts", s.hosts, "newCA", !exists)
			return data, nil
		case (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5:
			continue // another replica wrote it: use theirs
		default:
			return nil, fmt.Errorf("writing the webhook certificate Secret %s (the manager needs create and update on Secrets in %s): %w",
				key, key.Namespace, err)
		}
	}
}

// providedSecret reads the certificates of a Secret someone else keeps and checks that they
// serve the hosts the API server calls.
func (s *Server) providedSecret(ctx context.Context, key client.ObjectKey) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := s.client.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the webhook certificate Secret %s, said to be provided, does not exist: create it "+
				"(e.g. with a cert-manager Certificate for %s) or let the manager provision its own", key, s.hosts[0])
		}
		return nil, fmt.Errorf("reading the webhook certificate Secret %s: %w", key, err)
	}
	if err := checkProvided(secret.Data, s.hosts[0], time.Now()); err != nil {
		return nil, fmt.Errorf("the webhook certificate Secret %s: %w", key, err)
	}
	return secret.Data, nil
}

// clientConfig is how the API server reaches path on this server.
func (s *Server) clientConfig(path string, ca []byte) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: ca}
	if s.opts.Service != nil {
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: s.opts.Service.Namespace, Name: s.opts.Service.Name,
			Path: ptr.To(path), Port: ptr.To(s.opts.ServicePort)}
	} else {
		cc.URL = ptr.To(strings.TrimSuffix(s.opts.URL, "/") + path)
	}
	return cc
}

// ensureConfigurations creates or updates the webhook configurations.
func (s *Server) ensureConfigurations(ctx context.Context) error {
	s.mu.Lock()
	ca := append([]byte(nil), s.caBundle...)
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig { return s.clientConfig(path, ca) }
	mutating := s.mutating.desired(clientConfig)
	validating := s.validating.desired(clientConfig)
	s.mu.Unlock()
	if err := s.mutating.write(ctx, s, mutating); err != nil {
		return err
	}
	return s.validating.write(ctx, s, validating)
}

// apply creates obj, or updates it when set says it changed it (set changes obj as read).
func (s *Server) apply(ctx context.Context, obj client.Object, set func() bool) error {
	kind := "ValidatingWebhookConfiguration"
	if _, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
		kind = "MutatingWebhookConfiguration"
	}
	for attempt := 0; ; attempt++ {
		err := s.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			set()
			err = s.client.Create(ctx, obj)
		case err == nil:
			if !set() {
				return nil
			}
			err = s.client.Update(ctx, obj)
		}
		switch {
		case err == nil:
			log.FromContext(ctx).Info("webhook configuration written", "kind", kind, "name", obj.GetName())
			return nil
		case (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5:
			obj.SetResourceVersion("")
			continue
		default:
			return fmt.Errorf("writing %s %s (the manager needs get, create and update on %ss): %w",
				kind, obj.GetName(), strings.ToLower(kind), err)
		}
	}
}
