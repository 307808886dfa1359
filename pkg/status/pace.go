package status

import (
	"sync"
	"time"

	"github.com/kubestellar/syncer/pkg/framework"
)

// minWriteInterval is the least time between two status writes of one upstream object: an edge
// object whose status flaps costs at most one upstream write per interval, with the last status
// seen (the queue keeps one key, and the write reads the edge's status when it is made).
const minWriteInterval = time.Second

// pace remembers when each key's status was last written upstream.
type pace struct {
	mu    sync.Mutex
	last  map[framework.Key]time.Time
	swept time.Time // when entries older than the interval last went
}

// wait is how long key must wait before its status may be written again (0: now).
func (p *pace) wait(key framework.Key, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.last[key]; ok && now.Sub(at) < minWriteInterval {
		return minWriteInterval - now.Sub(at)
	}
	return 0
}

// wrote records a write of key's status at now; entries older than the interval go at most once an
// interval, once there are many (a sweep per write would cost a burst of writes the square of its
// size), so that the map holds the keys written within about two intervals.
func (p *pace) wrote(key framework.Key, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[framework.Key]time.Time{}
	}
	if len(p.last) >= 1024 && now.Sub(p.swept) >= minWriteInterval {
		p.swept = now
		for k, at := range p.last {
			if now.Sub(at) >= minWriteInterval {
				delete(p.last, k)
			}
		}
	}
	p.last[key] = now
}
