package downsync

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// EdgeStorageFull is the reason of the Warning Event on an upstream object not written because the
// syncer's copies at the edge would pass --max-edge-bytes.
const EdgeStorageFull = "EdgeStorageFull"

// stored is what the syncer's copies at the edge hold, by key, in bytes: the size of each copy as
// last written (the stored gate's reservation), or as its mark says (mapping.StoredBytesAnnotation,
// read from the edge's cache: copies kept at the edge after their upstream object went count too,
// across restarts). Its total is what a mailbox has made the edge store.
type stored struct {
	limit int64
	gauge interface{ Add(float64) }

	mu    sync.Mutex
	by    map[framework.Key]int64
	total int64
}

func newStored(limit int64, gauge interface{ Add(float64) }) *stored {
	return &stored{limit: limit, gauge: gauge, by: map[framework.Key]int64{}}
}

// set records key's copy as n bytes (0: none).
func (s *stored) set(key framework.Key, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(key, n)
}

func (s *stored) setLocked(key framework.Key, n int64) {
	delta := n - s.by[key]
	if n == 0 {
		delete(s.by, key)
	} else {
		s.by[key] = n
	}
	s.total += delta
	s.gauge.Add(float64(delta))
}

// observe records an edge copy the cache holds by its mark; one without a mark (written before the
// syncer counted) is left to the gate.
func (s *stored) observe(key framework.Key, u *unstructured.Unstructured) {
	if n, err := strconv.ParseInt(u.GetAnnotations()[mapping.StoredBytesAnnotation], 10, 64); err == nil && n > 0 {
		s.set(key, n)
	}
}

// reserve records key's copy as n bytes when the total stays within the limit, or when it does not
// grow (a copy that shrinks, or stays, is always written); else it tells the total there would be.
func (s *stored) reserve(key framework.Key, n int64) (ok bool, would int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.by[key]
	would = s.total - old + n
	if s.limit > 0 && n > old && would > s.limit {
		return false, would
	}
	s.setLocked(key, n)
	return true, would
}

// storedGate holds a write that would take the syncer's copies at the edge past --max-edge-bytes
// (what a mailbox can make the edge store), said once per key: a Warning Event on the upstream
// object, a failure in ObjectsSynced, a log line. The copy's size goes on it as its mark. A write
// that does not grow the copy always goes; a held key is tried again every --conflict-recheck-period
// (a deletion elsewhere may have made room).
func (c *Controller) storedGate(ctx context.Context, in *input) gate.Verdict {
	if in.reportOnly {
		return gate.Pass // nothing is written
	}
	data, err := json.Marshal(in.desired.Object)
	if err != nil {
		return gate.Stop(0, err)
	}
	n := int64(len(data))
	if ok, would := c.stored.reserve(in.key, n); !ok {
		reason := fmt.Sprintf("written, the syncer's copies at the edge would hold more than the %d bytes a mailbox may make the edge store (--max-edge-bytes); not written at the edge, which keeps what it has",
			c.stored.limit)
		klog.FromContext(ctx).V(logging.Detail).Info("Edge storage bound reached", "key", in.key.String(), "bytes", n, "wouldHold", would)
		if c.full.Report(ctx, in.key, reason) {
			c.writes.Event(in.up, corev1.EventTypeWarning, EdgeStorageFull, fmt.Sprintf("Sync target %s: %s", c.cfg.SyncTargetName, reason))
		}
		c.cfg.Metrics.Writes.WithLabelValues(metrics.Downsync, in.key.GVR.GroupResource().String(), metrics.Error).Inc()
		return gate.Stop(c.cfg.ConflictRecheckPeriod, nil) // a deletion elsewhere may make room
	}
	c.full.Clear(in.key)
	ann := in.desired.GetAnnotations()
	ann[mapping.StoredBytesAnnotation] = strconv.FormatInt(n, 10) // after the digest: not content
	in.desired.SetAnnotations(ann)
	return gate.Pass
}
