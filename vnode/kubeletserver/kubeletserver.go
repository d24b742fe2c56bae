// Package kubeletserver serves a virtual node's kubelet endpoint, so that `kubectl logs`,
// `kubectl exec` and `kubectl attach` work for the pods offloaded through it: the API server
// connects to the endpoint the Node advertises (status.addresses InternalIP and
// status.daemonEndpoints.kubeletEndpoint.Port), and each request is forwarded to the provider's
// API (pods/log, pods/exec, pods/attach of the remote pod, same name, mapped namespace) with the
// consumer's identity there.
//
// TLS: the serving certificate comes from the consumer cluster through the CSR API, signer
// kubernetes.io/kubelet-serving (CN system:node:<node>, O system:nodes, the advertised IP and
// the node name as SANs), as a real kubelet's; it is renewed at 70-90% of its life (client-go's
// certificate manager). Someone must approve the CSR: the controller manager's kubelet-serving
// approver (controllers/kubeletcsr) does, for virtual nodes only.
//
// Callers: only clients presenting a certificate of the cluster's client CA (the one the API
// server publishes in kube-system/extension-apiserver-authentication, key client-ca-file; the
// API server's --kubelet-client-certificate is one of those), and among them only those the
// cluster authorizes to reach the node's kubelet (a SubjectAccessReview of verb get or create on
// nodes/proxy for the node, as a kubelet in Webhook authorization mode asks).
package kubeletserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	vkapi "github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// Options tune the server.
type Options struct {
	// CertificateLifetime is the serving certificate's requested life (CSR expirationSeconds,
	// at least 10 minutes); 0 leaves it to the signer.
	CertificateLifetime time.Duration
	// MinRenewalInterval is the least time between two requests for the serving certificate,
	// whatever the signer returns (pki.DefaultMinRenewalInterval when zero).
	MinRenewalInterval time.Duration
	// StreamIdleTimeout closes exec and attach streams idle that long. Default 4h, as kubelet.
	StreamIdleTimeout time.Duration
	// StreamCreationTimeout bounds the creation of exec and attach streams. Default 30s.
	StreamCreationTimeout time.Duration
	// ClientCARefresh is how often the cluster's client CA is read again. Default 1m.
	ClientCARefresh time.Duration
}

// Server is the reflector serving each virtual node's kubelet endpoint.
type Server struct {
	opts Options
}

var _ vnode.Reflector = (*Server)(nil)

// New returns the kubelet endpoint reflector.
func New(opts Options) *Server {
	if opts.StreamIdleTimeout == 0 {
		opts.StreamIdleTimeout = 4 * time.Hour
	}
	if opts.StreamCreationTimeout == 0 {
		opts.StreamCreationTimeout = 30 * time.Second
	}
	if opts.ClientCARefresh == 0 {
		opts.ClientCARefresh = time.Minute
	}
	return &Server{opts: opts}
}

// Name names the reflector in logs.
func (s *Server) Name() string { return "kubelet-server" }

// Run serves the node's kubelet endpoint until ctx ends. Without an endpoint (the runner has no
// kubelet address) it only waits.
func (s *Server) Run(ctx context.Context, env *vnode.Env) error {
	if env.Kubelet == nil {
		env.Log.V(1).Info("no kubelet endpoint for this virtual node: kubectl logs and exec are not served")
		<-ctx.Done()
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Take the port first, and give it up on failure: callers are refused, not left hanging
	// in the listener's backlog, until this starts again.
	ln, err := env.Kubelet.Listen()
	if err != nil {
		return err
	}
	served := false
	defer func() {
		if !served {
			_ = ln.Close()
		}
	}()
	certs := startCertificates(ctx, env, s.opts.CertificateLifetime, s.opts.MinRenewalInterval)
	defer certs.Stop()
	cas, err := startClientCA(ctx, env.Local, s.opts.ClientCARefresh, env.Log)
	if err != nil {
		return err
	}
	fwd := &forwarder{env: env}
	mux := http.NewServeMux()
	vkapi.AttachPodRoutes(vkapi.PodHandlerConfig{
		RunInContainer:        fwd.exec,
		AttachToContainer:     fwd.attach,
		GetContainerLogs:      fwd.logs,
		StreamIdleTimeout:     s.opts.StreamIdleTimeout,
		StreamCreationTimeout: s.opts.StreamCreationTimeout,
	}, mux, false)
	base := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"}, // exec and attach upgrade the connection
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := certs.Current(); c != nil {
				return c, nil
			}
			return nil, fmt.Errorf("virtual node %s: no serving certificate yet (is its kubelet-serving CSR approved?)", env.NodeName)
		},
		ClientAuth: tls.RequireAndVerifyClientCert,
	}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = cas.pool()
		if c.ClientCAs == nil {
			return nil, errors.New("the cluster's client CA is not known yet")
		}
		return c, nil
	}
	srv := &http.Server{
		Handler:           &authorizer{next: withQuery(mux), kube: env.Local, node: env.NodeName, log: env.Log},
		TLSConfig:         base,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          stdlog.New(logWriter{env.Log}, "", 0),
	}
	env.Log.Info("serving the kubelet endpoint", "address", ln.Addr().String(), "advertised", net.JoinHostPort(env.Kubelet.IP, fmt.Sprint(env.Kubelet.Port)))
	errc := make(chan error, 1)
	served = true // ServeTLS closes ln
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("virtual node %s: serving the kubelet endpoint: %w", env.NodeName, err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close() // streams still open: cut them
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("virtual node %s: stopping the kubelet endpoint: %w", env.NodeName, err)
	}
	return nil
}

// logWriter passes the HTTP server's own messages (TLS handshake errors, ...) to the node's
// logger, at debug level: failed handshakes of unauthenticated callers are not our errors.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(p)), "component", "kubelet-endpoint")
	return len(p), nil
}
