package syncer

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// orphan is an object the audit found that the syncer should have deleted: by direction and key.
type orphan struct {
	direction string
	key       framework.Key
}

// runAudit looks every period for what the syncer should have deleted and has not: edge copies it
// owns whose upstream object is gone, upstream copies it made whose edge object is gone (the
// controllers' Orphans, read from complete caches, no work on them under way). The engine is
// level-triggered (a re-list looks at everything again, and an echo never hides a write's outcome
// from a later decision), so the audit should find nothing; it is the safety net that makes a missed
// deletion loud rather than silent. An object found in two audits in a row (not a deletion merely
// on its way) is logged at level 0, counted (kubestellar_syncer_orphans_found_total) and processed
// again. No round looks while a side is unreachable (a hung side's watches go silent without
// failing, so its cache does not show it is behind).
func (s *Syncer) runAudit(ctx context.Context, period time.Duration) {
	var suspects map[orphan]bool
	framework.Every(ctx, period, func() { suspects = s.audit(ctx, suspects) })
}

// audit is one round: it reports and requeues the orphans already suspected in the round before,
// and returns this round's suspects.
func (s *Syncer) audit(ctx context.Context, before map[orphan]bool) map[orphan]bool {
	for _, side := range []string{Upstream, Downstream} {
		if ok, _, _ := s.reachable(side); !ok {
			return nil // a side away: its cache may be behind, and writes to it wait
		}
	}
	now := map[orphan]bool{}
	for _, k := range s.downsync.Orphans() {
		now[orphan{metrics.Downsync, k}] = true
	}
	for _, k := range s.upsync.Orphans() {
		now[orphan{metrics.Upsync, k}] = true
	}
	logger := klog.FromContext(ctx)
	for o := range now {
		if !before[o] {
			continue
		}
		logger.Info("Found an object the syncer should have deleted and has not; processing it again (a missed deletion: please report it)",
			"direction", o.direction, "key", o.key.String())
		s.cfg.Metrics.Orphans.WithLabelValues(o.direction, o.key.GVR.GroupResource().String()).Inc()
		if o.direction == metrics.Downsync {
			s.downsync.Queue().Add(o.key)
		} else {
			s.upsync.Queue().Add(o.key)
		}
	}
	return now
}
