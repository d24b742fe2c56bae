package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nwTestNamespace creates a namespace for one test in a test cluster (through the Go client, so
// that destroying the resources under test does not delete it) and removes it when the test ends.
func nwTestNamespace(t *testing.T, clusterName, name string) {
	t.Helper()
	c := cluster(clusterName).Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s in %s: %v", name, clusterName, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
}

// nwSecretForms are the forms in which a key could leak: base64, unpadded and URL base64, hex.
func nwSecretForms(raw []byte) []string {
	return []string{
		base64.StdEncoding.EncodeToString(raw),
		base64.RawStdEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		hex.EncodeToString(raw),
	}
}

// nwNotInJSON fails when the JSON form of v contains any of the secrets.
func nwNotInJSON(what string, v any, secrets [][]byte) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshalling the %s: %w", what, err)
	}
	text := string(b)
	for i, s := range secrets {
		for _, form := range nwSecretForms(s) {
			if strings.Contains(text, form) {
				j := strings.Index(text, form)
				return fmt.Errorf("secret #%d appears in the %s, after %q", i, what, text[max(0, j-300):j])
			}
		}
	}
	return nil
}

// nwStateHasNoSecret is a state check that none of the secrets (got when the check runs) is in
// the state.
type nwStateHasNoSecret struct{ secrets func() [][]byte }

// CheckState scans the whole state.
func (c nwStateHasNoSecret) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = nwNotInJSON("state", req.State, c.secrets())
}

// nwPlanHasNoSecret is a plan check that none of the secrets is in the plan (planned values,
// prior state, configuration, variables: the whole rendered JSON plan).
type nwPlanHasNoSecret struct{ secrets func() [][]byte }

// CheckPlan scans the whole plan.
func (c nwPlanHasNoSecret) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = nwNotInJSON("plan", req.Plan, c.secrets())
}

// nwDeleteOutOfBand deletes an object as someone outside Terraform would, and waits until it is gone.
func nwDeleteOutOfBand(t *testing.T, clusterName string, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	c := cluster(clusterName).Client
	if err := c.Delete(ctx, obj); err != nil {
		t.Fatalf("deleting %s/%s out of band: %v", obj.GetNamespace(), obj.GetName(), err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s/%s not gone: %v", obj.GetNamespace(), obj.GetName(), err)
	}
}

// nwCheckGone returns a check that the objects are absent from a test cluster.
func nwCheckGone(clusterName string, objs ...client.Object) func(*terraform.State) error {
	return func(*terraform.State) error {
		for _, obj := range objs {
			err := cluster(clusterName).Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
			if err == nil {
				return fmt.Errorf("%T %s/%s in %s still exists", obj, obj.GetNamespace(), obj.GetName(), clusterName)
			}
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s/%s in %s: %w", obj, obj.GetNamespace(), obj.GetName(), clusterName, err)
			}
		}
		return nil
	}
}

// nwCheckLabels returns a check of labels on an object in a test cluster.
func nwCheckLabels(clusterName string, obj client.Object, want map[string]string) func(*terraform.State) error {
	return func(*terraform.State) error {
		cur := obj.DeepCopyObject().(client.Object)
		if err := cluster(clusterName).Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
			return fmt.Errorf("%s/%s in %s: %w", obj.GetNamespace(), obj.GetName(), clusterName, err)
		}
		for k, v := range want {
			if got, ok := cur.GetLabels()[k]; !ok || got != v {
				return fmt.Errorf("%s/%s label %s = %q (present %v), want %q", obj.GetNamespace(), obj.GetName(), k, got, ok, v)
			}
		}
		return nil
	}
}
