package clusterid_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/peerkit/terraform-provider-liqo/internal/clusterid"
)

// TestRead: the recorded ID is read; no ConfigMap, or one without CLUSTER_ID, is ErrNotRecorded
// with the ConfigMap named. (A fake client: the unit's edge cases; the callers' tests read real
// API servers.)
func TestRead(t *testing.T) {
	cm := func(data map[string]string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: "liqo-clusterid-configmap"}, Data: data}
	}
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		want    string
		wantErr string
	}{
		{"recorded", []client.Object{cm(map[string]string{"CLUSTER_ID": "cl-a"})}, "cl-a", ""},
		{"no ConfigMap", nil, "", "no ConfigMap liqo/liqo-clusterid-configmap"},
		{"no key", []client.Object{cm(map[string]string{"OTHER": "x"})}, "", "liqo/liqo-clusterid-configmap has no CLUSTER_ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.objs...).Build()
			id, err := clusterid.Read(t.Context(), c, "liqo")
			if string(id) != tc.want {
				t.Errorf("id %q, want %q", id, tc.want)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("error %v", err)
				}
				return
			}
			if !errors.Is(err, clusterid.ErrNotRecorded) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want ErrNotRecorded naming %q", err, tc.wantErr)
			}
		})
	}
}
