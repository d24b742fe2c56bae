package pods

// Origin tokens (Reflector.APIServer, upstream Liqo's "API server support" with the TokenRequest
// API): an offloaded pod's service-account tokens are the consumer's, for the consumer's API
// server, instead of the provider's.
//
// Each serviceAccountToken source of the pod's projected volumes becomes, in the remote pod, a
// Secret source: key TokenKey(volume, path) of the Secret TokenSecretName(pod) in the remote
// namespace, projected at the same path; the root CA of those volumes becomes the consumer's
// (liqo-kube-root-ca.crt, reflected by vnode/objects); the containers' KUBERNETES_SERVICE_HOST
// and KUBERNETES_SERVICE_PORT name the consumer's API server as the provider's pods reach it.
// The reflector requests the tokens on the consumer (TokenRequest for the pod's service account,
// with the source's audience and lifetime, bound to the local pod, so they die with it) and
// writes the Secret (labelled as a reflected copy, which the provider's Secret policy and
// ShadowPod controller require) before the ShadowPod, then owned by the ShadowPod (the
// provider's garbage collector deletes it with it). It requests them again at 80% of their
// lifetime (at most a day, as a kubelet does) and writes the Secret again; the provider's
// kubelet updates the projected files. Secrets are write-only for the consumer: what was written
// is known from memory only, so a restarted reflector requests and writes every pod's tokens
// once more.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// APIServerSupport makes offloaded pods use the consumer's API server: tokens of the consumer
// for their service account, and its address.
type APIServerSupport struct {
	// Host and Port are the consumer's API server as the provider's pods reach it: the remote
	// containers' KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT. Host is required.
	Host, Port string
}

// ReasonTokens is the reason of the Warning Events about a pod's origin tokens.
const ReasonTokens = "ServiceAccountTokens"

// defaultTokenSeconds is a token source's lifetime when it names none (the API's default).
const defaultTokenSeconds = 3600

// TokenSecretName is the Secret, in the remote namespace, with the origin tokens of the local
// pod of that name (upstream's name).
func TokenSecretName(pod string) string { return pod + "-token" }

// TokenKey is the key, in a TokenSecretName Secret, of the token of the serviceAccountToken
// source at path in volume (upstream's keys).
func TokenKey(volume, path string) string {
	sum := sha256.Sum256([]byte(path))
	return volume + "-" + hex.EncodeToString(sum[:3])
}

// tokenRefreshAfter says how long after its issue a token of that lifetime is requested again.
var tokenRefreshAfter = func(ttl time.Duration) time.Duration {
	return min(ttl*8/10, 24*time.Hour)
}

// tokenSource is one serviceAccountToken source of a pod.
type tokenSource struct {
	key string
	src *corev1.ServiceAccountTokenProjection
}

// tokenSources lists a pod spec's serviceAccountToken sources.
func tokenSources(spec *corev1.PodSpec) []tokenSource {
	var out []tokenSource
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.Projected == nil {
			continue
		}
		for j := range v.Projected.Sources {
			if t := v.Projected.Sources[j].ServiceAccountToken; t != nil {
				out = append(out, tokenSource{key: TokenKey(v.Name, t.Path), src: t})
			}
		}
	}
	return out
}

// rewrite makes a remote pod spec (remoteSpec's) read its tokens from the pod's Secret, trust
// the consumer's CA in those volumes, and reach the consumer's API server.
func (a *APIServerSupport) rewrite(spec *corev1.PodSpec, pod string) {
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.Projected == nil || !hasTokenSource(v.Projected) {
			continue
		}
		for j := range v.Projected.Sources {
			s := &v.Projected.Sources[j]
			if t := s.ServiceAccountToken; t != nil {
				s.ServiceAccountToken = nil
				s.Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: TokenSecretName(pod)},
					Items: []corev1.KeyToPath{{Key: TokenKey(v.Name, t.Path), Path: t.Path}}}
			}
			if cm := s.ConfigMap; cm != nil {
				cm.Name = remoteConfigMap(cm.Name)
			}
		}
	}
	env := []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: a.Host}}
	if a.Port != "" {
		env = append(env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: a.Port},
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: a.Port})
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			c := &cs[i]
			for _, e := range env {
				c.Env = setEnv(c.Env, e)
			}
		}
	}
}

// setEnv sets e in env, in place of a variable of the same name.
func setEnv(env []corev1.EnvVar, e corev1.EnvVar) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == e.Name {
			env[i] = e
			return env
		}
	}
	return append(env, e)
}

// podTokens is what was last written for one local pod.
type podTokens struct {
	uid     types.UID
	owner   types.UID // the ShadowPod the Secret is owned by ("" none)
	refresh time.Time
	data    map[string][]byte
}

// tokenStore holds the tokens written, by local namespace/name.
type tokenStore struct {
	mu   sync.Mutex
	pods map[string]*podTokens
}

func (s *tokenStore) get(key string) *podTokens {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[key]
}

func (s *tokenStore) set(key string, t *podTokens) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[string]*podTokens{}
	}
	s.pods[key] = t
}

func (s *tokenStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, key)
}

// syncTokens writes the origin tokens Secret of a local pod in mode tokensOrigin when it is due: never written (by
// this run) for this pod, a token to refresh, or a ShadowPod (sp; nil before its creation) to
// be owned by. It schedules the next refresh.
func (rf *reflection) syncTokens(ctx context.Context, pod *corev1.Pod, remoteNs string, sp *offv1beta1.ShadowPod) error {
	sources := tokenSources(&pod.Spec)
	if tokenModeOf(pod, rf.apiServer) != tokensOrigin || len(sources) == 0 || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	key := pod.Namespace + "/" + pod.Name
	var owner types.UID
	if sp != nil {
		owner = sp.UID
	}
	cur := rf.tokens.get(key)
	now := time.Now()
	if cur != nil && cur.uid == pod.UID && now.Before(cur.refresh) && cur.owner == owner {
		return nil
	}
	next := &podTokens{uid: pod.UID, owner: owner}
	if cur != nil && cur.uid == pod.UID && now.Before(cur.refresh) {
		next.refresh, next.data = cur.refresh, cur.data // only the owner is new
	} else {
		var err error
		if next.data, next.refresh, err = rf.requestTokens(ctx, pod, sources); err != nil {
			rf.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonTokens, "requesting the pod's service-account tokens: %v", err)
			return err
		}
	}
	if err := rf.writeTokens(ctx, pod, remoteNs, sp, next.data); err != nil {
		return err
	}
	rf.tokens.set(key, next)
	rf.queue.AddAfter(key, time.Until(next.refresh))
	return nil
}

// requestTokens requests, on the consumer, a token for each source, bound to the pod; it
// returns them by key and when the first is to be refreshed.
func (rf *reflection) requestTokens(ctx context.Context, pod *corev1.Pod, sources []tokenSource) (map[string][]byte, time.Time, error) {
	sa := serviceAccount(&pod.Spec)
	data := make(map[string][]byte, len(sources))
	var refresh time.Time
	for _, s := range sources {
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(ptr.Deref(s.src.ExpirationSeconds, defaultTokenSeconds)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}
		if s.src.Audience != "" {
			req.Spec.Audiences = []string{s.src.Audience}
		}
		issued := time.Now()
		res, err := rf.local.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("token of service account %s/%s for pod %s (audience %q): %w", pod.Namespace, sa, pod.Name, s.src.Audience, err)
		}
		data[s.key] = []byte(res.Status.Token)
		at := issued.Add(tokenRefreshAfter(res.Status.ExpirationTimestamp.Sub(issued)))
		if refresh.IsZero() || at.Before(refresh) {
			refresh = at
		}
	}
	return data, refresh, nil
}

// writeTokens writes the pod's tokens Secret on the provider, without reading it (the consumer
// may not): an update, or a create when there is none.
func (rf *reflection) writeTokens(ctx context.Context, pod *corev1.Pod, remoteNs string, sp *offv1beta1.ShadowPod, data map[string][]byte) error {
	lbl := maps.Clone(rf.labels)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: TokenSecretName(pod.Name), Namespace: remoteNs, Labels: lbl,
		Annotations: map[string]string{consts.OriginNamespaceAnnotation: pod.Namespace}},
		Type: corev1.SecretTypeOpaque, Data: data}
	if sp != nil {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: offv1beta1.GroupVersion.String(), Kind: "ShadowPod", Name: sp.Name, UID: sp.UID}}
	}
	secrets := rf.remote.CoreV1().Secrets(remoteNs)
	_, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
	}
	if apierrors.IsForbidden(err) {
		rf.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonTokens,
			"provider %s refused the pod's tokens Secret %s/%s (is a Secret of that name its own?): %v", rf.env.ProviderID, remoteNs, s.Name, err)
	}
	if err != nil {
		return fmt.Errorf("writing the tokens Secret %s/%s of pod %s/%s on provider %s: %w", remoteNs, s.Name, pod.Namespace, pod.Name, rf.env.ProviderID, err)
	}
	return nil
}

// dropTokens deletes the tokens Secret of a local pod gone (its ShadowPod's deletion takes it
// too, once owned).
func (rf *reflection) dropTokens(ctx context.Context, ns, name, remoteNs string) error {
	key := ns + "/" + name
	if rf.apiServer == nil || rf.tokens.get(key) == nil {
		return nil
	}
	err := rf.remote.CoreV1().Secrets(remoteNs).Delete(ctx, TokenSecretName(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("deleting the tokens Secret %s/%s of pod %s on provider %s: %w", remoteNs, TokenSecretName(name), key, rf.env.ProviderID, err)
	}
	rf.tokens.forget(key)
	return nil
}
