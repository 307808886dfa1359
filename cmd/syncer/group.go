package main

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/errgroup"
)

// component is one long-running part of the process: a server or the engine. It returns when ctx is
// done (nil) or when it fails.
type component struct {
	name string
	run  func(ctx context.Context) error
}

// runAll runs the components until ctx is done or one of them fails; then it cancels the others and
// returns only after every one has returned, with all their errors (cancellation is not an error).
func runAll(ctx context.Context, components ...component) error {
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	var errs []error
	for _, c := range components {
		g.Go(func() error {
			err := c.run(gctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return err // cancels the others
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
