package warnings

import (
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// The edge resources the controller watches: Warning Events, and the Pods and ReplicaSets through
// which a warning about a Pod reaches the object the syncer wrote.
var (
	Events      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	Pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ReplicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

// EventSelector is the field selector of the Events informer: warnings only.
const EventSelector = "type=" + corev1.EventTypeWarning

const (
	// Resend is how long one reason on one upstream object is not told again.
	Resend = time.Minute
	// MaxAge is how old a warning may be when seen and still be told.
	MaxAge = 2 * time.Minute
	// maxMessage caps the edge's message in what is told.
	maxMessage = 512
	// maxOwnerHops bounds the walk from an edge object up its controllers to one the syncer wrote
	// (a Pod, its ReplicaSet, their Deployment).
	maxOwnerHops = 3
	// maxRemembered bounds what is remembered of recent tellings; past it, expired ones are forgotten.
	maxRemembered = 10000
)

// Resource is a downsynced resource as the controller needs it.
type Resource struct {
	Upstream, Downstream schema.GroupVersionResource
	// Rename, when a conversion applies, renames objects between the sides.
	Rename *mapping.Rename
}

// Selection finds the downsynced resource of an edge object's kind.
type Selection interface {
	// ByKind is the downsynced resource whose edge objects are of this group and kind.
	ByKind(gk schema.GroupKind) (Resource, bool)
}

// Config is what NewController needs.
type Config struct {
	UpstreamInformers   framework.Informers
	DownstreamInformers framework.Informers
	// Pods and ReplicaSets are the edge's, as Signals caches.
	Pods, ReplicaSets framework.Cache
	Selection         Selection
	// Recorder records Events upstream.
	Recorder       record.EventRecorder
	Metrics        *metrics.Metrics
	SyncTargetName string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Controller tells warnings at the edge upstream. Its handlers do the work on the informers'
// goroutines: cache reads and an Event handed to the recorder, which writes asynchronously.
type Controller struct {
	cfg Config

	mu   sync.Mutex
	told map[toldKey]time.Time
}

// toldKey is one reason on one upstream object.
type toldKey struct {
	key    framework.Key
	reason string
}

// NewController wires the controller; it does no API I/O.
func NewController(cfg Config) (*Controller, error) {
	if cfg.UpstreamInformers == nil || cfg.DownstreamInformers == nil || cfg.Pods == nil || cfg.ReplicaSets == nil ||
		cfg.Selection == nil || cfg.Recorder == nil || cfg.Metrics == nil {
		return nil, errors.New("warnings: every Config field but Now is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Controller{cfg: cfg, told: map[toldKey]time.Time{}}, nil
}

// warning is one thing to tell: about an edge object, why.
type warning struct {
	about          ref
	reason, detail string
}

// ref names an edge object (its namespace as the engine names it).
type ref struct {
	gk              schema.GroupKind
	namespace, name string
}

func (r ref) String() string {
	if r.namespace == "" {
		return r.gk.Kind + " " + r.name
	}
	return r.gk.Kind + " " + r.namespace + "/" + r.name
}

// EventHandler handles the edge's Warning Events.
func (c *Controller) EventHandler(logger klog.Logger) cache.ResourceEventHandler {
	handle := func(obj interface{}) {
		if e := framework.ObjectOf(obj); e != nil {
			if w, ok := c.fromEvent(e); ok {
				c.tell(logger, w)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, newObj interface{}) { handle(newObj) },
	}
}

// PodHandler handles the edge's Pods: containers that started waiting for a reason worth telling, or
// were OOM-killed.
func (c *Controller) PodHandler(logger klog.Logger) cache.ResourceEventHandler {
	handle := func(oldObj, newObj interface{}) {
		n := framework.ObjectOf(newObj)
		if n == nil {
			return
		}
		var o *unstructured.Unstructured
		if oldObj != nil {
			o = framework.ObjectOf(oldObj)
		}
		for _, w := range containerWarnings(o, n) {
			c.tell(logger, w)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { handle(nil, obj) },
		UpdateFunc: handle,
	}
}

// fromEvent is what a Warning Event says, if it is recent.
func (c *Controller) fromEvent(e *unstructured.Unstructured) (warning, bool) {
	if t, _, _ := unstructured.NestedString(e.Object, "type"); t != corev1.EventTypeWarning {
		return warning{}, false
	}
	if last, ok := lastSeen(e); !ok || c.cfg.Now().Sub(last) > MaxAge {
		return warning{}, false
	}
	involved, _, _ := unstructured.NestedStringMap(e.Object, "involvedObject")
	gv, err := schema.ParseGroupVersion(involved["apiVersion"])
	if err != nil || involved["kind"] == "" || involved["name"] == "" {
		return warning{}, false
	}
	reason, _, _ := unstructured.NestedString(e.Object, "reason")
	msg, _, _ := unstructured.NestedString(e.Object, "message")
	// The Event's namespace is its object's, as the engine names it (a workspace's view translates it).
	about := ref{gk: schema.GroupKind{Group: gv.Group, Kind: involved["kind"]}, namespace: e.GetNamespace(), name: involved["name"]}
	if involved["namespace"] == "" {
		about.namespace = ""
	}
	return warning{about: about, reason: reason, detail: msg}, reason != ""
}

// lastSeen is when an Event was last seen: its series', its lastTimestamp or its eventTime.
func lastSeen(e *unstructured.Unstructured) (time.Time, bool) {
	for _, path := range [][]string{{"series", "lastObservedTime"}, {"lastTimestamp"}, {"eventTime"}} {
		if s, ok, _ := unstructured.NestedString(e.Object, path...); ok && s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil { // its fraction is optional
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// tell records w on the upstream original of the object the syncer wrote that w is about, unless
// told shortly before.
func (c *Controller) tell(logger klog.Logger, w warning) {
	r, root, ok := c.root(w.about)
	if !ok {
		return
	}
	key := framework.Key{GVR: r.Upstream, Namespace: root.namespace, Name: r.Rename.UpName(root.name)}
	up, synced, err := framework.Cached(c.cfg.UpstreamInformers, r.Upstream, key.Namespace, key.Name)
	if err != nil || !synced || up == nil || up.GetDeletionTimestamp() != nil {
		return
	}
	if !c.first(toldKey{key, w.reason}) {
		c.cfg.Metrics.EdgeWarnings.WithLabelValues(metrics.WarningRepeated).Inc()
		return
	}
	detail := w.detail
	if len(detail) > maxMessage {
		detail = detail[:maxMessage] + "..."
	}
	msg := fmt.Sprintf("sync target %s: %s: %s", c.cfg.SyncTargetName, w.about, detail)
	c.cfg.Recorder.Event(up, corev1.EventTypeWarning, w.reason, msg)
	c.cfg.Metrics.EdgeWarnings.WithLabelValues(metrics.WarningTold).Inc()
	logger.V(logging.Detail).Info("Told a warning at the edge upstream", "key", key, "reason", w.reason, "about", w.about.String())
}

// first tells whether k was not told within Resend, and remembers it as told now.
func (c *Controller) first(k toldKey) bool {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.told[k]; ok && now.Sub(at) < Resend {
		return false
	}
	if len(c.told) >= maxRemembered {
		for old, at := range c.told {
			if now.Sub(at) >= Resend {
				delete(c.told, old)
			}
		}
	}
	c.told[k] = now
	return true
}
