package downsync

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// What a deletion at the edge takes with it, weighed before it is made (the deletion breaker counts
// it): the contents of a Namespace or a CRD, the volumes of a StatefulSet, the data or replicas a
// rewrite empties. No object the syncer did not write is deleted by a cascade the syncer started.

// Contents lists objects at the edge, read live (not the syncer's caches, which hold its own only).
type Contents interface {
	// InNamespace lists the objects in a namespace, of every namespaced resource the edge serves and
	// lists (Events aside).
	InNamespace(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error)
	// OfResource lists the objects of a resource in every namespace; none when the edge does not
	// serve it.
	OfResource(ctx context.Context, gr schema.GroupResource) ([]*unstructured.Unstructured, error)
}

// contentsWait is how long a container first waits for the syncer's own objects in it to go, doubling
// up to contentsWaitMax while they do not.
const (
	contentsWait    = 2 * time.Second
	contentsWaitMax = time.Minute
)

// contentsGate deletes a Namespace or a CRD (whose deletion takes everything in it: the namespace
// controller, the apiextensions finalizer) only when nothing is left in it but what goes with it
// anyway. The syncer's own objects in it go first, each a deletion of its own (counted by the
// breaker), while the container waits; an object the syncer did not write, or keeps (create-only,
// kept on delete), keeps the container at the edge, said once upstream, looked at again every
// ConflictRecheckPeriod.
func (c *Controller) contentsGate(ctx context.Context, in *input) gate.Verdict {
	if c.cfg.Contents == nil {
		return gate.Pass
	}
	var items []*unstructured.Unstructured
	var err error
	switch in.r.Downstream.GroupResource() {
	case wellknown.Namespaces.GroupResource():
		items, err = c.cfg.Contents.InNamespace(ctx, in.down.GetName())
	case wellknown.CRDs.GroupResource():
		items, err = c.cfg.Contents.OfResource(ctx, crdResource(in.down.GetName()))
	default:
		return gate.Pass
	}
	if err != nil {
		c.keep(ctx, in, fmt.Sprintf("not deleted at the edge: what it holds there cannot be listed (%v), and its deletion would take it all", err))
		return gate.Stop(c.cfg.ConflictRecheckPeriod, nil)
	}
	ours, others := c.weighContents(items)
	switch {
	case len(others) > 0:
		c.keep(ctx, in, fmt.Sprintf("not deleted at the edge: it holds %d objects the syncer did not write there, or keeps (%s), which its deletion would take with it; they stay, and so does it",
			len(others), bounded(others, 3)))
		return gate.Stop(c.cfg.ConflictRecheckPeriod, nil)
	case ours > 0 && !in.reportOnly:
		wait := c.emptying.next(in.key)
		klog.FromContext(ctx).V(logging.Change).Info("Waiting for the syncer's own objects in it to be deleted first", "left", ours, "recheckIn", wait.String())
		return gate.Stop(wait, nil)
	}
	c.emptying.forget(in.key)
	c.kept.Clear(in.key)
	return gate.Pass
}

// weighContents sorts the objects a container holds: the syncer's own that it will delete (ours), and
// the others that its deletion would take (described), leaving out those going already and those
// that go with another anyway (dependents, the apiserver's own in every namespace).
func (c *Controller) weighContents(items []*unstructured.Unstructured) (ours int, others []string) {
	for _, o := range items {
		switch {
		case o.GetDeletionTimestamp() != nil || goesWithAnother(o):
		case mapping.OwnedDownstream(o) && c.ours(o) && !mapping.CreateOnly(o) && !mapping.KeepOnDelete(o):
			ours++
		default:
			others = append(others, describe(o))
		}
	}
	return ours, others
}

// goesWithAnother tells whether an object goes when another does, whatever the syncer deletes: a
// dependent (its owner, if not the syncer's, keeps the container itself), Endpoints (of a Service),
// what the apiserver makes in every namespace.
func goesWithAnother(o *unstructured.Unstructured) bool {
	if len(o.GetOwnerReferences()) > 0 {
		return true
	}
	if o.GetAPIVersion() != "v1" {
		return false
	}
	switch o.GetKind() {
	case "Endpoints":
		return true
	case "ServiceAccount":
		return o.GetName() == "default"
	case "ConfigMap":
		return o.GetName() == "kube-root-ca.crt"
	}
	return false
}

// describe names an object in a message: Kind namespace/name.
func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// bounded joins up to n of items, saying how many more there are.
func bounded(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// crdResource is the resource a CRD defines, from its name (plural.group).
func crdResource(name string) schema.GroupResource {
	plural, group, _ := strings.Cut(name, ".")
	return schema.GroupResource{Group: group, Resource: plural}
}

// keep says once, per reason, why an edge object no longer wanted is kept: a log line at level 0, a
// Warning Event on the upstream object when there is one, a failure in ObjectsSynced.
func (c *Controller) keep(ctx context.Context, in *input, reason string) {
	if !c.kept.Report(ctx, in.key, reason) {
		return
	}
	if in.up != nil {
		c.writes.Event(in.up, corev1.EventTypeWarning, KeptAtEdge, fmt.Sprintf("Sync target %s: %s", c.cfg.SyncTargetName, reason))
	}
}

// KeptAtEdge is the reason of the Event saying an edge object no longer wanted is kept.
const KeptAtEdge = "KeptAtEdge"

// mayDelete asks the deletion breaker whether a deletion at the edge weighing weight may go ahead
// now: pass, wait to be counted with the others due now, or hold (released, the key comes back).
func (c *Controller) mayDelete(ctx context.Context, key framework.Key, weight int) gate.Verdict {
	d := c.cfg.Deletions
	if d == nil {
		return gate.Pass
	}
	switch ok, wait, tripped := d.Allow(key, weight); {
	case tripped:
		klog.FromContext(ctx).Info("Holding every deletion at the edge: too many fell due (the deletion breaker); see condition DeletionsHeld on the SyncerConfigs")
		if c.cfg.OnDeletionsHeld != nil {
			c.cfg.OnDeletionsHeld()
		}
		return gate.Stop(0, nil)
	case wait > 0:
		return gate.Stop(wait, nil) // counted with the others due now
	case !ok:
		klog.FromContext(ctx).V(logging.Change).Info("Deletion held by the deletion breaker")
		return gate.Stop(0, nil)
	}
	return gate.Pass
}

// weightOf is what deleting an edge copy takes: itself, and the PersistentVolumeClaims of a
// StatefulSet whose claims go with it (persistentVolumeClaimRetentionPolicy.whenDeleted Delete), read
// live (the cache holds no spec).
func (c *Controller) weightOf(ctx context.Context, in *input) (int, error) {
	if in.r.Downstream.GroupResource() != (schema.GroupResource{Group: "apps", Resource: "statefulsets"}) {
		return 1, nil
	}
	live, err := c.cfg.Downstream.Resource(in.r.Downstream).Namespace(in.key.Namespace).Get(ctx, in.down.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return 1, nil
	case err != nil:
		return 0, fmt.Errorf("reading what the StatefulSet's deletion takes: %w", err)
	}
	return 1 + claimsGoingWith(live), nil
}

// claimsGoingWith counts the PersistentVolumeClaims a StatefulSet's deletion deletes: one per replica
// and claim template when its retention policy deletes them.
func claimsGoingWith(sts *unstructured.Unstructured) int {
	policy, _, _ := unstructured.NestedString(sts.Object, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
	templates, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	if policy != "Delete" || len(templates) == 0 {
		return 0
	}
	replicas, found, _ := unstructured.NestedInt64(sts.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	return int(replicas) * len(templates)
}

// emptyingGate counts a rewrite that empties an edge copy like a deletion (the breaker holds it the
// same way): replicas taken to 0, a ConfigMap's or Secret's data emptied; unless the configs
// selecting the object allow it (allowEmptying, where the site honours it). The object is wanted: a
// deletion of it held is no longer due, nor is an emptying the upstream object no longer asks for.
func (c *Controller) emptyingGate(ctx context.Context, in *input) gate.Verdict {
	d := c.cfg.Deletions
	if d == nil {
		return gate.Pass
	}
	d.Forget(in.key)
	key := rewriteKey(in.key, emptying)
	if in.reportOnly || in.down == nil || (in.policy.AllowEmptying && c.cfg.AllowEmptyingHonoured) || !emptied(in.desired) {
		d.Forget(key)
		return gate.Pass
	}
	// Read live: the cache holds no content.
	live, err := c.cfg.Downstream.Resource(in.r.Downstream).Namespace(in.key.Namespace).Get(ctx, in.desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		d.Forget(key)
		return gate.Pass
	case err != nil:
		return gate.Stop(0, fmt.Errorf("reading what a rewrite would empty: %w", err))
	case emptied(live):
		d.Forget(key)
		return gate.Pass
	}
	klog.FromContext(ctx).V(logging.Change).Info("A rewrite empties the edge copy: counted as a deletion by the deletion breaker")
	return c.mayDelete(ctx, key, 1)
}

// The deletions a write makes, counted by the breaker under a key of their own (rewriteKey): the copy
// a conversion replaces, the object recreated because the edge refuses a change in place, the
// content a rewrite empties. Wanted again, an object's own key is forgotten (its deletion is no
// longer due); these are forgotten when the write no longer makes them.
const (
	renamed    = "renamed"
	recreating = "recreate"
	emptying   = "emptying"
)

// rewriteKey is the breaker's key of a deletion a write of key makes: key's name with what it is in
// parentheses (no object is so named), as the DeletionsHeld condition shows it.
func rewriteKey(key framework.Key, what string) framework.Key {
	key.Name += " (" + what + ")"
	return key
}

// forgetRewrite drops a held deletion of key's write that the write no longer makes.
func (c *Controller) forgetRewrite(key framework.Key, what string) {
	if c.cfg.Deletions != nil {
		c.cfg.Deletions.Forget(rewriteKey(key, what))
	}
}

// Released enqueues the objects of keys the deletion breaker released: their deletions, or the
// writes that make them, go ahead when processed.
func (c *Controller) Released(keys []framework.Key) {
	for _, k := range keys {
		if name, _, ok := strings.Cut(k.Name, " ("); ok {
			k.Name = name
		}
		c.queue.Add(k)
	}
}

// emptied tells whether an object has replicas 0, or is a ConfigMap or Secret without data.
func emptied(o *unstructured.Unstructured) bool {
	if replicas, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); found {
		return replicas == 0
	}
	if o.GetAPIVersion() != "v1" || (o.GetKind() != "ConfigMap" && o.GetKind() != "Secret") {
		return false
	}
	for _, field := range []string{"data", "binaryData", "stringData"} {
		if m, _, _ := unstructured.NestedFieldNoCopy(o.Object, field); m != nil {
			if mm, ok := m.(map[string]interface{}); !ok || len(mm) > 0 {
				return false
			}
		}
	}
	return true
}

// backoffs are doubling waits by key.
type backoffs struct {
	mu   sync.Mutex
	wait map[framework.Key]time.Duration
}

// next is the key's next wait: contentsWait, then twice the last, up to contentsWaitMax.
func (b *backoffs) next(key framework.Key) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wait == nil {
		b.wait = map[framework.Key]time.Duration{}
	}
	w := b.wait[key] * 2
	if w < contentsWait {
		w = contentsWait
	}
	if w > contentsWaitMax {
		w = contentsWaitMax
	}
	b.wait[key] = w
	return w
}

func (b *backoffs) forget(key framework.Key) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.wait, key)
}
