package downsync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// fakeContents is what the edge holds, by namespace ("" for a resource's objects).
type fakeContents struct {
	in  []*unstructured.Unstructured
	err error
}

func (f fakeContents) InNamespace(context.Context, string) ([]*unstructured.Unstructured, error) {
	return f.in, f.err
}
func (f fakeContents) OfResource(context.Context, schema.GroupResource) ([]*unstructured.Unstructured, error) {
	return f.in, f.err
}

// TestContentsGate: a Namespace (or CRD) no longer wanted goes only when nothing but what goes with it
// anyway is left in it: it waits, with a growing wait, while the syncer's own objects are there; it
// is kept, and said once, while anything else is (what the edge made, what the syncer keeps); it is
// kept too when its contents cannot be listed.
func TestContentsGate(t *testing.T) {
	nsDown := owned(t, nsA)
	mine := owned(t, upCM)
	kept := owned(t, u("v1", "ConfigMap", "a", "kept", nil))
	kept.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: mapping.MarkOf(kept), mapping.PropagateDeletionAnnotation: "false"})
	edgeMade := u("v1", "ConfigMap", "a", "notes", map[string]interface{}{"k": "v"})
	dependent := u("v1", "Pod", "a", "web-1", nil)
	dependent.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "1"}})
	going := u("v1", "Secret", "a", "old", nil)
	going.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	fixtures := []*unstructured.Unstructured{u("v1", "ServiceAccount", "a", "default", nil), u("v1", "ConfigMap", "a", "kube-root-ca.crt", nil), dependent, going}

	for _, tc := range []struct {
		name     string
		contents fakeContents
		stop     bool
		after    time.Duration
		said     string
	}{
		{name: "empty but for what goes with it: deleted", contents: fakeContents{in: fixtures}},
		{name: "the syncer's own left: waits", contents: fakeContents{in: append([]*unstructured.Unstructured{mine}, fixtures...)}, stop: true, after: contentsWait},
		{name: "the edge's own: kept", contents: fakeContents{in: []*unstructured.Unstructured{mine, edgeMade}}, stop: true, after: time.Minute, said: "ConfigMap a/notes"},
		{name: "what the syncer keeps: kept", contents: fakeContents{in: []*unstructured.Unstructured{kept}}, stop: true, after: time.Minute, said: "ConfigMap a/kept"},
		{name: "not listable: kept", contents: fakeContents{err: errors.New("forbidden")}, stop: true, after: time.Minute, said: "cannot be listed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, selecting("a"), nil, nil)
			h.c.cfg.Contents = tc.contents
			nsKey := framework.Key{GVR: wellknown.Namespaces, Name: "a"}
			in := &input{key: nsKey, r: Resource{Upstream: wellknown.Namespaces, Downstream: wellknown.Namespaces}, down: nsDown}
			v := h.c.contentsGate(context.Background(), in)
			if v.Stop != tc.stop || v.After != tc.after || v.Err != nil {
				t.Errorf("verdict %+v, want stop %v after %v", v, tc.stop, tc.after)
			}
			_, problems := h.c.kept.Problems(5)
			switch {
			case tc.said == "" && len(problems) > 0:
				t.Errorf("said %v, want nothing", problems)
			case tc.said != "" && (len(problems) != 1 || !strings.Contains(problems[0].String(), tc.said)):
				t.Errorf("said %v, want one problem naming %q", problems, tc.said)
			}
			if tc.after == contentsWait {
				if v := h.c.contentsGate(context.Background(), in); v.After != 2*contentsWait {
					t.Errorf("second wait %v, want %v", v.After, 2*contentsWait)
				}
			}
		})
	}
}

// TestWeights: a StatefulSet whose claims go with it weighs them; others weigh 1.
func TestWeights(t *testing.T) {
	sts := u("apps/v1", "StatefulSet", "a", "db", nil)
	sts.Object["spec"] = map[string]interface{}{"replicas": int64(3), "volumeClaimTemplates": []interface{}{map[string]interface{}{}, map[string]interface{}{}},
		"persistentVolumeClaimRetentionPolicy": map[string]interface{}{"whenDeleted": "Delete"}}
	if n := claimsGoingWith(sts); n != 6 {
		t.Errorf("claims going with a StatefulSet of 3 replicas and 2 claim templates deleted with it: %d, want 6", n)
	}
	_ = unstructured.SetNestedField(sts.Object, "Retain", "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
	if n := claimsGoingWith(sts); n != 0 {
		t.Errorf("claims going with a StatefulSet that retains them: %d, want 0", n)
	}
}

// TestEmptied: what a rewrite empties.
func TestEmptied(t *testing.T) {
	deploy := func(replicas int64) *unstructured.Unstructured {
		d := u("apps/v1", "Deployment", "a", "web", nil)
		d.Object["spec"] = map[string]interface{}{"replicas": replicas}
		return d
	}
	for _, tc := range []struct {
		o    *unstructured.Unstructured
		want bool
	}{
		{deploy(0), true}, {deploy(2), false},
		{u("v1", "ConfigMap", "a", "x", nil), true}, {u("v1", "ConfigMap", "a", "x", map[string]interface{}{}), true},
		{u("v1", "ConfigMap", "a", "x", map[string]interface{}{"k": "v"}), false},
		{u("v1", "Service", "a", "x", nil), false},
	} {
		if got := emptied(tc.o); got != tc.want {
			t.Errorf("emptied(%s %v) = %v, want %v", tc.o.GetKind(), tc.o.Object, got, tc.want)
		}
	}
}

// TestKeepOnImmutable: claims and volumes are not recreated unless they opt in; others unless they
// opt out.
func TestKeepOnImmutable(t *testing.T) {
	pvc := u("v1", "PersistentVolumeClaim", "a", "data", nil)
	if !mapping.KeepOnImmutable(pvc) {
		t.Error("a PersistentVolumeClaim would be recreated")
	}
	pvc.SetAnnotations(map[string]string{mapping.RecreateAnnotation: "true"})
	if mapping.KeepOnImmutable(pvc) {
		t.Error("a PersistentVolumeClaim opting in is kept")
	}
	job := u("batch/v1", "Job", "a", "j", nil)
	if mapping.KeepOnImmutable(job) {
		t.Error("a Job is kept")
	}
	job.SetAnnotations(map[string]string{mapping.RecreateAnnotation: "false"})
	if !mapping.KeepOnImmutable(job) {
		t.Error("a Job opting out would be recreated")
	}
	if crdResource("widgets.example.com") != (schema.GroupResource{Group: "example.com", Resource: "widgets"}) {
		t.Error("crdResource")
	}
}

// TestRewriteKeys: the deletions a write makes are held under keys of their own, released back to the
// object's key.
func TestRewriteKeys(t *testing.T) {
	h := newHarness(t, selecting("a"), nil, nil)
	k := rewriteKey(key, recreating)
	if k == key || !strings.HasSuffix(k.String(), "(recreate)") {
		t.Errorf("rewrite key %s", k)
	}
	h.c.Released([]framework.Key{k})
	if h.c.queue.Len() != 1 {
		t.Fatalf("%d keys queued, want 1", h.c.queue.Len())
	}
}
