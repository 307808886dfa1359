package syncer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// TestFenceProof: the fence is in force when a write it must deny is denied by it; not when the write
// is allowed; a refusal by RBAC proves nothing and the next write is tried; an error keeps the last
// answer (none yet: not in force).
func TestFenceProof(t *testing.T) {
	fenceDenial := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x",
		errors.New("ValidatingAdmissionPolicy 'a-fence' denied request: the edge owner's fence keeps the syncer out of namespace a"))
	rbacDenial := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("User cannot create resource"))
	for _, tc := range []struct {
		name              string
		configMap, update error
		inForce           bool
		why               string
	}{
		{name: "denied by the fence", configMap: fenceDenial, inForce: true},
		{name: "allowed", why: "the fence's ValidatingAdmissionPolicy or its binding is missing"},
		{name: "RBAC, then the fence", configMap: rbacDenial, update: fenceDenial, inForce: true},
		{name: "RBAC both", configMap: rbacDenial, update: rbacDenial, why: "no write the fence must deny could be tried"},
		{name: "unreachable", configMap: errors.New("connection refused"), why: "not proven yet: create a ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			client.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.configMap })
			client.PrependReactor("patch", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.update })
			p := &fenceProof{client: client, namespace: "a", metrics: metrics.New(prometheus.NewRegistry())}
			p.prove(context.Background())
			inForce, why := p.InForce()
			if inForce != tc.inForce || !strings.Contains(why, tc.why) {
				t.Errorf("in force %v (%q), want %v (%q)", inForce, why, tc.inForce, tc.why)
			}
		})
	}
}
