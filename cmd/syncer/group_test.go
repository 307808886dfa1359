package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunAllWaitsForEveryComponent is the regression test of a failing server returning without
// waiting for the engine: the failure stops the others, and runAll returns only after all have
// returned, with every error.
func TestRunAllWaitsForEveryComponent(t *testing.T) {
	var engineDone atomic.Bool
	engine := component{name: "engine", run: func(ctx context.Context) error {
		<-ctx.Done()
		time.Sleep(200 * time.Millisecond) // draining
		engineDone.Store(true)
		return nil
	}}
	broken := errors.New("address already in use")
	metricsServer := component{name: "metrics", run: func(context.Context) error { return broken }}
	health := component{name: "health", run: func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("health shutdown failed")
	}}
	err := runAll(context.Background(), metricsServer, health, engine)
	if !engineDone.Load() {
		t.Fatal("runAll returned before the engine stopped")
	}
	if !errors.Is(err, broken) || err == nil || !strings.Contains(err.Error(), "health shutdown failed") {
		t.Fatalf("err = %v, want both failures", err)
	}
	// Stopped from outside, nothing failed: no error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runAll(ctx, engine); err != nil {
		t.Fatalf("a clean stop returned %v", err)
	}
}
