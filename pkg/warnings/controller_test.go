package warnings

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/syncer/pkg/framework/fakeinformers"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	jobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	now         = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
)

// selected downsyncs Deployments and Jobs.
type selected struct{}

func (selected) ByKind(gk schema.GroupKind) (Resource, bool) {
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		return Resource{Upstream: deployments, Downstream: deployments}, true
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		return Resource{Upstream: jobs, Downstream: jobs}, true
	}
	return Resource{}, false
}

func object(apiVersion, kind, name string, owner *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace("app")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + kind + "-" + name))
	if owner != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(),
			UID: owner.GetUID(), Controller: ptr.To(true)}})
	}
	return u
}

// owned marks an edge object as the syncer's copy.
func owned(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{mapping.DownsyncedAnnotation: mapping.MarkOf(u)})
	return u
}

// bed is a controller over an edge with Deployment web (the syncer's) → ReplicaSet web-1 → Pod
// web-1-a, a Deployment other (not the syncer's) → other-1 → other-1-a, and a Job batch (the
// syncer's) → Pod batch-a.
type bed struct {
	c        *Controller
	recorder *record.FakeRecorder
	metrics  *metrics.Metrics
	clock    time.Time
}

func newBed(t *testing.T) *bed {
	t.Helper()
	web, other, batch := owned(object("apps/v1", "Deployment", "web", nil)), object("apps/v1", "Deployment", "other", nil),
		owned(object("batch/v1", "Job", "batch", nil))
	rs, otherRS := object("apps/v1", "ReplicaSet", "web-1", web), object("apps/v1", "ReplicaSet", "other-1", other)
	pods := fakeinformers.With(object("v1", "Pod", "web-1-a", rs), object("v1", "Pod", "other-1-a", otherRS), object("v1", "Pod", "batch-a", batch))
	b := &bed{recorder: record.NewFakeRecorder(100), metrics: metrics.New(prometheus.NewRegistry()), clock: now}
	c, err := NewController(Config{
		UpstreamInformers: fakeinformers.Informers{
			deployments: fakeinformers.With(object("apps/v1", "Deployment", "web", nil), object("apps/v1", "Deployment", "other", nil)),
			jobs:        fakeinformers.With(object("batch/v1", "Job", "batch", nil)),
		},
		DownstreamInformers: fakeinformers.Informers{deployments: fakeinformers.With(web, other), jobs: fakeinformers.With(batch)},
		Pods:                pods, ReplicaSets: fakeinformers.With(rs, otherRS),
		Selection: selected{}, Recorder: b.recorder, Metrics: b.metrics, SyncTargetName: "edge1",
		Now: func() time.Time { return b.clock },
	})
	if err != nil {
		t.Fatal(err)
	}
	b.c = c
	return b
}

// event is an edge Warning Event about an object, last seen at seen.
func event(kind, apiVersion, name, reason, message string, seen time.Time) *unstructured.Unstructured {
	e := object("v1", "Event", name+"."+reason, nil)
	e.Object["type"] = "Warning"
	e.Object["reason"] = reason
	e.Object["message"] = message
	e.Object["lastTimestamp"] = seen.Format(time.RFC3339)
	e.Object["involvedObject"] = map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "namespace": "app", "name": name}
	return e
}

// told is what the recorder received since the last call.
func (b *bed) told() []string {
	var out []string
	for {
		select {
		case e := <-b.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestEventsReachTheObjectTheSyncerWrote(t *testing.T) {
	b := newBed(t)
	h := b.c.EventHandler(klog.Background())
	h.OnAdd(event("Pod", "v1", "web-1-a", "Failed", `Failed to pull image "nope:1": not found`, now), false)
	h.OnAdd(event("ReplicaSet", "apps/v1", "web-1", "FailedCreate", "quota exceeded", now), false)
	h.OnAdd(event("Deployment", "apps/v1", "web", "Odd", "about the Deployment itself", now), false)
	h.OnAdd(event("Pod", "v1", "batch-a", "FailedScheduling", "0/1 nodes are available", now), false)
	got := b.told()
	want := []string{
		`Warning Failed sync target edge1: Pod app/web-1-a: Failed to pull image "nope:1": not found`,
		"Warning FailedCreate sync target edge1: ReplicaSet app/web-1: quota exceeded",
		"Warning Odd sync target edge1: Deployment app/web: about the Deployment itself",
		"Warning FailedScheduling sync target edge1: Pod app/batch-a: 0/1 nodes are available",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("told upstream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEventsNotTold(t *testing.T) {
	b := newBed(t)
	h := b.c.EventHandler(klog.Background())
	h.OnAdd(event("Pod", "v1", "other-1-a", "Failed", "not the syncer's Deployment", now), false)
	h.OnAdd(event("Pod", "v1", "unknown", "Failed", "not in the cache", now), false)
	h.OnAdd(event("Node", "v1", "n1", "Rebooted", "not a workload", now), false)
	h.OnAdd(event("Pod", "v1", "web-1-a", "Failed", "listed at start, long ago", now.Add(-MaxAge-time.Second)), true)
	normal := event("Pod", "v1", "web-1-a", "Pulled", "a Normal event", now)
	normal.Object["type"] = "Normal"
	h.OnAdd(normal, false)
	if got := b.told(); len(got) != 0 {
		t.Errorf("told upstream: %q; want nothing", got)
	}
}

func TestRepeatsToldOncePerResend(t *testing.T) {
	b := newBed(t)
	h := b.c.EventHandler(klog.Background())
	backOff := func(pod string) *unstructured.Unstructured {
		return event("Pod", "v1", pod, "BackOff", "Back-off restarting failed container app", b.clock)
	}
	for i := 0; i < 10; i++ {
		h.OnUpdate(nil, backOff("web-1-a"))
		b.clock = b.clock.Add(time.Second)
	}
	if got := b.told(); len(got) != 1 {
		t.Errorf("a crash loop's 10 BackOff events within %v told %d times upstream (%q); want once", Resend, len(got), got)
	}
	h.OnUpdate(nil, event("Pod", "v1", "web-1-a", "Failed", "another reason", b.clock))
	if got := b.told(); len(got) != 1 {
		t.Errorf("another reason on the same object: told %q; want it told", got)
	}
	b.clock = b.clock.Add(Resend)
	h.OnUpdate(nil, backOff("web-1-a"))
	if got := b.told(); len(got) != 1 {
		t.Errorf("the same reason a Resend period later: told %q; want it told again", got)
	}
	if told, repeated := testutil.ToFloat64(b.metrics.EdgeWarnings.WithLabelValues(metrics.WarningTold)),
		testutil.ToFloat64(b.metrics.EdgeWarnings.WithLabelValues(metrics.WarningRepeated)); told != 3 || repeated != 9 {
		t.Errorf("edge_warnings_total told %v, repeated %v; want 3 and 9", told, repeated)
	}
}

// pod is Pod web-1-a with one container in the given state.
func pod(waiting, lastTerminated string, restarts int64) *unstructured.Unstructured {
	p := object("v1", "Pod", "web-1-a", object("apps/v1", "ReplicaSet", "web-1", nil))
	status := map[string]interface{}{"name": "app", "restartCount": restarts, "state": map[string]interface{}{}}
	if waiting != "" {
		status["state"] = map[string]interface{}{"waiting": map[string]interface{}{"reason": waiting, "message": "because"}}
	}
	if lastTerminated != "" {
		status["lastState"] = map[string]interface{}{"terminated": map[string]interface{}{"reason": lastTerminated, "exitCode": int64(137)}}
	}
	p.Object["status"] = map[string]interface{}{"containerStatuses": []interface{}{status}}
	return p
}

func TestContainerStates(t *testing.T) {
	b := newBed(t)
	h := b.c.PodHandler(klog.Background())
	h.OnAdd(pod("", "", 0), false)
	h.OnUpdate(pod("", "", 0), pod("ErrImagePull", "", 0))
	h.OnUpdate(pod("ErrImagePull", "", 0), pod("ErrImagePull", "", 0)) // unchanged: nothing new
	h.OnUpdate(pod("ErrImagePull", "", 0), pod("ContainerCreating", "", 0))
	h.OnUpdate(pod("", "", 0), pod("CrashLoopBackOff", "OOMKilled", 1))
	got := b.told()
	want := []string{
		"Warning ErrImagePull sync target edge1: Pod app/web-1-a: container app is waiting: because",
		"Warning CrashLoopBackOff sync target edge1: Pod app/web-1-a: container app is waiting: because",
		"Warning OOMKilled sync target edge1: Pod app/web-1-a: container app was killed for want of memory (OOMKilled)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("told upstream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLongMessagesAreCut(t *testing.T) {
	b := newBed(t)
	b.c.EventHandler(klog.Background()).OnAdd(event("Pod", "v1", "web-1-a", "Failed", strings.Repeat("x", 4*maxMessage), now), false)
	got := b.told()
	if len(got) != 1 || len(got[0]) > maxMessage+100 || !strings.HasSuffix(got[0], "...") {
		t.Errorf("told %q; want one message cut to about %d characters", got, maxMessage)
	}
}
