package framework

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// unfinishedWorkPeriod is how often the unfinished-work gauges are updated (client-go's period).
const unfinishedWorkPeriod = 500 * time.Millisecond

// baseQueue is the base of a Queue, under client-go's delaying and rate-limiting queues: client-go's
// workqueue.Typed, rule for rule (a key is queued once, a key added while it is processed is queued
// again when done, Touch on a queued key, shutdown with or without drain; the same metrics), with two
// differences. Its maps are made anew once mostly drained after a backlog (Peak): Go maps
// keep the size they grew to, and an initial sync queues every object at once (client-go's set of
// queued keys and its metrics' map of add times held about 600 B per object of a 10,000-object sync
// afterwards). And its keys are ordered by lanes.
type baseQueue struct {
	cond  *sync.Cond
	lanes *lanes

	dirty      map[Key]struct{} // queued, or added again while processing
	processing map[Key]time.Time
	addTimes   map[Key]time.Time // when a dirty key was added (the queue-duration metric)
	peak       Peak              // of dirty

	shuttingDown, drain bool
	stopOnce            sync.Once
	stopCh              chan struct{}

	depth                   workqueue.GaugeMetric
	adds                    workqueue.CounterMetric
	latency, workDuration   workqueue.HistogramMetric
	unfinished, longestBusy workqueue.SettableGaugeMetric
}

var _ workqueue.TypedInterface[Key] = &baseQueue{}

// newBaseQueue makes a base queue whose metrics, named name, the provider records (none when nil).
func newBaseQueue(name string, l *lanes, provider workqueue.MetricsProvider) *baseQueue {
	q := &baseQueue{
		cond: sync.NewCond(&sync.Mutex{}), lanes: l, stopCh: make(chan struct{}),
		dirty: map[Key]struct{}{}, processing: map[Key]time.Time{}, addTimes: map[Key]time.Time{},
	}
	if provider == nil || name == "" {
		q.depth, q.adds, q.latency, q.workDuration, q.unfinished, q.longestBusy = noMetric{}, noMetric{}, noMetric{}, noMetric{}, noMetric{}, noMetric{}
		return q
	}
	q.depth, q.adds = provider.NewDepthMetric(name), provider.NewAddsMetric(name)
	q.latency, q.workDuration = provider.NewLatencyMetric(name), provider.NewWorkDurationMetric(name)
	q.unfinished, q.longestBusy = provider.NewUnfinishedWorkSecondsMetric(name), provider.NewLongestRunningProcessorSecondsMetric(name)
	go q.updateUnfinishedWorkLoop()
	return q
}

func (q *baseQueue) Add(key Key) {
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	if q.shuttingDown {
		return
	}
	if _, dirty := q.dirty[key]; dirty {
		if _, busy := q.processing[key]; !busy {
			q.lanes.Touch(key)
		}
		return
	}
	q.adds.Inc()
	q.depth.Inc()
	q.addTimes[key] = time.Now()
	q.dirty[key] = struct{}{}
	q.peak.Saw(len(q.dirty))
	if _, busy := q.processing[key]; busy {
		return
	}
	q.lanes.Push(key)
	q.cond.Signal()
}

func (q *baseQueue) Len() int {
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	return q.lanes.Len()
}

func (q *baseQueue) Get() (Key, bool) {
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	for q.lanes.Len() == 0 && !q.shuttingDown {
		q.cond.Wait()
	}
	if q.lanes.Len() == 0 {
		return Key{}, true // shutting down
	}
	key := q.lanes.Pop()
	now := time.Now()
	q.depth.Dec()
	if added, ok := q.addTimes[key]; ok {
		q.latency.Observe(now.Sub(added).Seconds())
		delete(q.addTimes, key)
	}
	q.processing[key] = now
	delete(q.dirty, key)
	if q.peak.Drained(len(q.dirty)) {
		q.dirty, q.addTimes = Remade(q.dirty), Remade(q.addTimes) // give back what a backlog took
	}
	return key, false
}

func (q *baseQueue) Done(key Key) {
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	if started, ok := q.processing[key]; ok {
		q.workDuration.Observe(time.Since(started).Seconds())
		delete(q.processing, key)
	}
	if _, dirty := q.dirty[key]; dirty {
		q.lanes.Push(key)
		q.cond.Signal()
	} else if len(q.processing) == 0 {
		q.cond.Signal() // ShutDownWithDrain waits for this
	}
}

func (q *baseQueue) ShutDown() {
	q.stop()
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	q.drain, q.shuttingDown = false, true
	q.cond.Broadcast()
}

// ShutDownWithDrain stops taking keys and waits until the keys being processed are done (not the
// queued ones: those are dropped, as in client-go).
func (q *baseQueue) ShutDownWithDrain() {
	q.stop()
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	q.drain, q.shuttingDown = true, true
	q.cond.Broadcast()
	for len(q.processing) != 0 && q.drain {
		q.cond.Wait()
	}
}

func (q *baseQueue) ShuttingDown() bool {
	q.cond.L.Lock()
	defer q.cond.L.Unlock()
	return q.shuttingDown
}

func (q *baseQueue) stop() { q.stopOnce.Do(func() { close(q.stopCh) }) }

// updateUnfinishedWorkLoop sets the gauges of how long the keys being processed have been, until
// the queue shuts down.
func (q *baseQueue) updateUnfinishedWorkLoop() {
	t := time.NewTicker(unfinishedWorkPeriod)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			q.cond.L.Lock()
			var total, oldest float64
			for _, started := range q.processing {
				age := time.Since(started).Seconds()
				total += age
				oldest = max(oldest, age)
			}
			q.cond.L.Unlock()
			q.unfinished.Set(total)
			q.longestBusy.Set(oldest)
		case <-q.stopCh:
			return
		}
	}
}

// noMetric records nothing (a queue without a metrics provider).
type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}
