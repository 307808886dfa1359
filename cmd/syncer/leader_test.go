package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// TestLeaseReleasedAfterEngineStopped is the regression test of a Lease released while the engine's
// workers still drained: client-go releases on cancel without waiting for OnStartedLeading, so a
// standby could take over and write concurrently.
func TestLeaseReleasedAfterEngineStopped(t *testing.T) {
	kube := kubefake.NewClientset()
	var mu sync.Mutex
	var released time.Time
	kube.PrependReactor("update", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if l, ok := a.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease); ok && (l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "") {
			mu.Lock()
			released = time.Now()
			mu.Unlock()
		}
		return false, nil, nil
	})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "lease", kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	le := leaderElection{lock: lock, leaseDuration: 2 * time.Second, renewDeadline: time.Second, retryPeriod: 100 * time.Millisecond,
		metrics: metrics.New(prometheus.NewRegistry()), leading: &atomic.Bool{}}

	var engineStopped atomic.Int64
	leading := make(chan struct{})
	engine := func(ctx context.Context) error {
		close(leading)
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond) // workers draining
		engineStopped.Store(time.Now().UnixNano())
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- le.run(ctx, engine) }()
	select {
	case <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) && err != nil {
		t.Fatalf("run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if released.IsZero() {
		t.Fatal("the Lease was not released")
	}
	if stopped := time.Unix(0, engineStopped.Load()); released.Before(stopped) {
		t.Fatalf("the Lease was released %v before the engine stopped", stopped.Sub(released))
	}
}

// TestStandbyStopsAtOnce: a process that never led returns as soon as it is stopped, without
// running the engine.
func TestStandbyStopsAtOnce(t *testing.T) {
	kube := kubefake.NewClientset()
	held, _ := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "lease", kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "other"})
	other := leaderElection{lock: held, leaseDuration: 10 * time.Second, renewDeadline: 5 * time.Second, retryPeriod: 100 * time.Millisecond,
		metrics: metrics.New(prometheus.NewRegistry()), leading: &atomic.Bool{}}
	otherCtx, stopOther := context.WithCancel(context.Background())
	defer stopOther()
	go func() { _ = other.run(otherCtx, func(ctx context.Context) error { <-ctx.Done(); return nil }) }()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return other.leading.Load(), nil
	}); err != nil {
		t.Fatal("the other process never led")
	}

	lock, _ := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "lease", kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "me"})
	me := leaderElection{lock: lock, leaseDuration: 10 * time.Second, renewDeadline: 5 * time.Second, retryPeriod: 100 * time.Millisecond,
		metrics: metrics.New(prometheus.NewRegistry()), leading: &atomic.Bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ran := false
	err := me.run(ctx, func(context.Context) error { ran = true; return nil })
	if ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("standby: ran the engine %v, err %v", ran, err)
	}
}
