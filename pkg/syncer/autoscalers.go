package syncer

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/autoscale"
	"github.com/kubestellar/syncer/pkg/informermanager"
)

// autoscalersListWait is how long watchAutoscalers waits for the edge's HorizontalPodAutoscalers to be
// listed; objects with replicas wait for them as long (downsync), then sync as if none scaled them.
const autoscalersListWait = time.Minute

// watchAutoscalers watches the edge's HorizontalPodAutoscalers into s.autoscalers (package autoscale)
// until the engine stops. It returns at once; work waits for their listing and marks the index known,
// saying once why when they cannot be listed (the syncer's edge identity may not, or the edge does not
// serve autoscaling/v2): then autoscalers are not seen, and everything syncs regardless.
func (s *Syncer) watchAutoscalers(ctx context.Context, work interface{ Go(func()) }) {
	logger := klog.FromContext(ctx).WithValues("resource", autoscale.HorizontalPodAutoscalers.GroupResource().String())
	hpas, err := s.down.Watch(autoscale.HorizontalPodAutoscalers, informermanager.Signals, informermanager.Spec{}, s.autoscalers.Handler())
	if err != nil {
		logger.Error(err, "Cannot watch the edge's autoscalers; the replicas of the objects they scale are applied from upstream")
		s.autoscalers.Known()
		return
	}
	work.Go(func() {
		defer s.autoscalers.Known()
		if listedWithin(ctx, autoscalersListWait, map[string]*informermanager.Watched{"horizontalpodautoscalers": hpas}) {
			return
		}
		logger.Error(hpas.Denied(), "Cannot list the edge's autoscalers; the replicas of the objects they scale are applied from upstream (may the syncer list and watch them?)")
	})
}
