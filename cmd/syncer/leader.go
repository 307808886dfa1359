package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// leaderElection is how the engine runs under a Lease.
type leaderElection struct {
	lock                                      resourcelock.Interface
	leaseDuration, renewDeadline, retryPeriod time.Duration
	watchdog                                  *leaderelection.HealthzAdaptor // may be nil
	metrics                                   *metrics.Metrics
	leading                                   *atomic.Bool
}

// run runs engine while this process holds the Lease. The Lease is released only after the engine
// has returned: the elector's own context ends then, not when ctx does, so that a standby never takes
// over while workers still drain. Losing the Lease stops the engine and returns an error, so that the
// process exits and its restart competes again (as kube-controller-manager does); a standby watches
// and writes nothing.
func (l leaderElection) run(ctx context.Context, engine func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()

	var mu sync.Mutex
	started := false
	engineDone := make(chan error, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: l.lock, Name: l.lock.Describe(), ReleaseOnCancel: true, WatchDog: l.watchdog,
		LeaseDuration: l.leaseDuration, RenewDeadline: l.renewDeadline, RetryPeriod: l.retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) {
				mu.Lock()
				if ctx.Err() != nil {
					mu.Unlock()
					return // stopping already
				}
				started = true
				mu.Unlock()
				l.leading.Store(true)
				l.metrics.Leader.Set(1)
				logger.Info("Leading: starting the engine", "lease", l.lock.Describe(), "identity", l.lock.Identity())
				engineCtx, cancel := context.WithCancel(leaseCtx) // ends when the Lease is lost...
				stop := context.AfterFunc(ctx, cancel)            // ...or when the process stops
				err := engine(engineCtx)
				stop()
				cancel()
				engineDone <- err
				stopElector() // the work has stopped: now release the Lease
			},
			OnStoppedLeading: func() {
				l.leading.Store(false)
				l.metrics.Leader.Set(0)
			},
			OnNewLeader: func(identity string) {
				if identity != l.lock.Identity() {
					logger.Info("Standing by; another syncer leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if l.watchdog != nil {
		l.watchdog.SetLeaderElection(le) // so that /healthz fails when the Lease is not renewed in time
	}
	stopWatching := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			stopElector() // never led: nothing to wait for
		}
	})
	defer stopWatching()

	logger.Info("Waiting to lead", "lease", l.lock.Describe(), "identity", l.lock.Identity())
	le.Run(electorCtx)
	mu.Lock()
	led := started
	mu.Unlock()
	if !led {
		return ctx.Err()
	}
	engineErr := <-engineDone
	if ctx.Err() == nil && engineErr == nil {
		return fmt.Errorf("lost the Lease %s; exiting so that a restart competes again", l.lock.Describe())
	}
	return engineErr
}
