package syncer

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/warnings"
)

// warningsListWait is how long watchWarnings waits for the edge's Events, Pods and ReplicaSets to be
// listed before it says why they are not.
const warningsListWait = time.Minute

// listedWithin waits up to d for the watched resources to be listed; true when they are, or when
// ctx ended first (nothing to say then).
func listedWithin(ctx context.Context, d time.Duration, watched map[string]*informermanager.Watched) bool {
	listed := func(context.Context) (bool, error) {
		for _, w := range watched {
			if !w.Synced("") {
				return false, nil
			}
		}
		return true, nil
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d, true, listed) == nil || ctx.Err() != nil
}

// watchWarnings starts telling warnings at the edge upstream (package warnings), when configured: the
// edge's Warning Events, Pods and ReplicaSets are watched from now until the engine stops. It
// returns at once; work waits for the check that they can be listed, which says once why not (the
// syncer's edge identity may not list them, say): everything else syncs regardless.
func (s *Syncer) watchWarnings(ctx context.Context, work interface{ Go(func()) }) {
	if !s.cfg.EdgeWarnings || s.cfg.Recorder == nil {
		return
	}
	logger := klog.FromContext(ctx).WithValues("controller", "warnings")
	pods, err := s.down.Watch(warnings.Pods, informermanager.Signals, informermanager.Spec{}, nil)
	if err != nil {
		logger.Error(err, "Cannot watch Pods at the edge; warnings at the edge are not told upstream")
		return
	}
	replicaSets, err := s.down.Watch(warnings.ReplicaSets, informermanager.Signals, informermanager.Spec{}, nil)
	if err != nil {
		logger.Error(err, "Cannot watch ReplicaSets at the edge; warnings at the edge are not told upstream")
		return
	}
	c, err := warnings.NewController(warnings.Config{
		UpstreamInformers: s.up, DownstreamInformers: s.down, Pods: pods, ReplicaSets: replicaSets,
		Selection: warningsView{s.snapshot}, Recorder: s.cfg.Recorder, Metrics: s.cfg.Metrics, SyncTargetName: s.cfg.SyncTargetName,
	})
	if err != nil {
		logger.Error(err, "Cannot tell warnings at the edge upstream")
		return
	}
	if _, err := pods.AddHandler(c.PodHandler(logger)); err != nil {
		logger.Error(err, "Cannot watch Pods at the edge")
	}
	events, err := s.down.Watch(warnings.Events, informermanager.Signals, informermanager.Spec{FieldSelector: warnings.EventSelector},
		c.EventHandler(logger))
	if err != nil {
		logger.Error(err, "Cannot watch Events at the edge; warnings at the edge are not told upstream")
		return
	}
	watched := map[string]*informermanager.Watched{"events": events, "pods": pods, "replicasets": replicaSets}
	work.Go(func() {
		if listedWithin(ctx, warningsListWait, watched) {
			return
		}
		for resource, w := range watched {
			if err := w.Denied(); err != nil || !w.Synced("") {
				logger.Error(err, "Cannot list a resource at the edge; warnings at the edge are not told upstream (may the syncer list and watch it?)",
					"resource", resource)
			}
		}
	})
}
