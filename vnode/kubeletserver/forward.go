package kubeletserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	vkapi "github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// forwarder turns kubelet API requests for the node's pods into requests to the provider's API
// for their remote copies.
type forwarder struct {
	env *vnode.Env
}

// remoteNamespace checks that the local pod runs on this virtual node in an offloaded
// namespace and returns the namespace of its remote copy (which has the same name).
func (f *forwarder) remoteNamespace(ctx context.Context, namespace, name string) (string, error) {
	pod, err := f.env.Local.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", errdefs.NotFoundf("pod %s/%s not found", namespace, name) //nolint:wrapcheck // virtual-kubelet answers 404 for this type
	}
	if err != nil {
		return "", fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	if pod.Spec.NodeName != f.env.NodeName {
		return "", errdefs.NotFoundf("pod %s/%s is not on virtual node %s", namespace, name, f.env.NodeName) //nolint:wrapcheck // virtual-kubelet answers 404 for this type
	}
	remote, ok := f.env.Namespaces.Remote(namespace)
	if !ok {
		return "", errdefs.NotFoundf("namespace %s is not offloaded to cluster %s", namespace, f.env.ProviderID) //nolint:wrapcheck // virtual-kubelet answers 404 for this type
	}
	return remote, nil
}

// logs streams the logs of the remote container.
func (f *forwarder) logs(ctx context.Context, namespace, pod, container string, o vkapi.ContainerLogOpts) (io.ReadCloser, error) {
	remote, err := f.remoteNamespace(ctx, namespace, pod)
	if err != nil {
		return nil, err
	}
	opts := &corev1.PodLogOptions{Container: container, Follow: o.Follow, Previous: o.Previous, Timestamps: o.Timestamps}
	if _, set := queryOf(ctx)["tailLines"]; set || o.Tail > 0 {
		opts.TailLines = ptr.To(int64(o.Tail))
	}
	if o.LimitBytes > 0 {
		opts.LimitBytes = ptr.To(int64(o.LimitBytes))
	}
	if o.SinceSeconds > 0 {
		opts.SinceSeconds = ptr.To(int64(o.SinceSeconds))
	}
	if !o.SinceTime.IsZero() {
		opts.SinceTime = &metav1.Time{Time: o.SinceTime}
	}
	rc, err := f.env.Remote.CoreV1().Pods(remote).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, remoteError(err, "logs", remote, pod, f.env)
	}
	return rc, nil
}

// exec runs cmd in the remote container, streaming what the caller asked for.
func (f *forwarder) exec(ctx context.Context, namespace, pod, container string, cmd []string, aio vkapi.AttachIO) error {
	remote, err := f.remoteNamespace(ctx, namespace, pod)
	if err != nil {
		return err
	}
	opts := &corev1.PodExecOptions{Container: container, Command: cmd, Stdin: aio.Stdin() != nil,
		Stdout: aio.Stdout() != nil, Stderr: aio.Stderr() != nil && !aio.TTY(), TTY: aio.TTY()}
	return f.stream(ctx, "exec", remote, pod, opts, aio)
}

// attach attaches to the remote container. The provider must grant pods/attach in the remote
// namespace for it to work.
func (f *forwarder) attach(ctx context.Context, namespace, pod, container string, aio vkapi.AttachIO) error {
	remote, err := f.remoteNamespace(ctx, namespace, pod)
	if err != nil {
		return err
	}
	opts := &corev1.PodAttachOptions{Container: container, Stdin: aio.Stdin() != nil,
		Stdout: aio.Stdout() != nil, Stderr: aio.Stderr() != nil && !aio.TTY(), TTY: aio.TTY()}
	return f.stream(ctx, "attach", remote, pod, opts, aio)
}

// stream opens subresource (exec or attach) of the remote pod over WebSocket, falling back to
// SPDY when the provider's API server does not upgrade to WebSocket, as kubectl does. An exit
// code of the remote command is returned as is, so that the caller sees it.
func (f *forwarder) stream(ctx context.Context, subresource, namespace, pod string, opts runtime.Object, aio vkapi.AttachIO) error {
	u := f.env.Remote.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).
		SubResource(subresource).VersionedParams(opts, scheme.ParameterCodec).URL()
	spdy, err := remotecommand.NewSPDYExecutor(f.env.RemoteConfig, http.MethodPost, u)
	if err != nil {
		return fmt.Errorf("%s of pod %s/%s on cluster %s: %w", subresource, namespace, pod, f.env.ProviderID, err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(f.env.RemoteConfig, http.MethodGet, u.String())
	if err != nil {
		return fmt.Errorf("%s of pod %s/%s on cluster %s: %w", subresource, namespace, pod, f.env.ProviderID, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("%s of pod %s/%s on cluster %s: %w", subresource, namespace, pod, f.env.ProviderID, err)
	}
	so := remotecommand.StreamOptions{Tty: aio.TTY()}
	if in := aio.Stdin(); in != nil {
		so.Stdin = in
	}
	if out := aio.Stdout(); out != nil {
		so.Stdout = out
	}
	if e := aio.Stderr(); e != nil && !aio.TTY() {
		so.Stderr = e
	}
	if aio.TTY() && aio.Resize() != nil {
		so.TerminalSizeQueue = &sizeQueue{ctx: ctx, ch: aio.Resize()}
	}
	err = exec.StreamWithContext(ctx, so)
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		return exit // unwrapped: virtual-kubelet reports its code
	}
	if err != nil {
		return remoteError(err, subresource, namespace, pod, f.env)
	}
	return nil
}

// sizeQueue passes terminal resizes on to the provider.
type sizeQueue struct {
	ctx context.Context
	ch  <-chan vkapi.TermSize
}

// Next returns the next size, or nil when the stream ends.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s, ok := <-q.ch:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Width, Height: s.Height}
	case <-q.ctx.Done():
		return nil
	}
}

// remoteError turns an error of the provider's API into one the kubelet API reports well.
func remoteError(err error, what, namespace, pod string, env *vnode.Env) error {
	wrapped := fmt.Errorf("%s of pod %s/%s on cluster %s: %w", what, namespace, pod, env.ProviderID, err)
	switch {
	case apierrors.IsNotFound(err):
		return errdefs.AsNotFound(wrapped) //nolint:wrapcheck // wrapped above; the type makes a 404
	case apierrors.IsBadRequest(err):
		return errdefs.AsInvalidInput(wrapped) //nolint:wrapcheck // wrapped above; the type makes a 400
	}
	return wrapped
}
