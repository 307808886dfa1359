package framework

import "sync"

// lanes orders a Queue's keys (client-go's workqueue.Queue): two FIFO lanes, keys that waited for
// something that has now happened (AddWaited: their namespace reached the edge) ahead of the rest.
// The workqueue holds a key once; a key already queued in the back lane that is added as waited
// moves to the front (Touch), its old place being skipped when reached. The workqueue calls Push,
// Pop, Touch and Len under its own lock; the marks of AddWaited come from outside it.
type lanes struct {
	front, back []Key
	inFront     map[Key]struct{}
	frontPeak   Peak // of inFront
	// moved counts, per key, the places in back that a move to the front left behind.
	moved map[Key]int
	stale int // sum of moved

	mu    sync.Mutex
	first map[Key]struct{} // keys to put in front at their next Push or Touch
}

func newLanes() *lanes {
	return &lanes{inFront: map[Key]struct{}{}, moved: map[Key]int{}, first: map[Key]struct{}{}}
}

// markFirst puts key in the front lane at its next Push or Touch.
func (l *lanes) markFirst(key Key) {
	l.mu.Lock()
	l.first[key] = struct{}{}
	l.mu.Unlock()
}

// takeMark tells whether key was marked, and forgets the mark.
func (l *lanes) takeMark(key Key) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.first[key]
	delete(l.first, key)
	return ok
}

func (l *lanes) Push(key Key) {
	if l.takeMark(key) {
		l.toFront(key)
		return
	}
	l.back = append(l.back, key)
}

// Touch is called when a queued key is added again: a marked one moves to the front, unless it is
// there already.
func (l *lanes) Touch(key Key) {
	if !l.takeMark(key) {
		return
	}
	if _, ok := l.inFront[key]; ok {
		return
	}
	l.toFront(key)
	l.moved[key]++
	l.stale++
}

func (l *lanes) toFront(key Key) {
	l.front = append(l.front, key)
	l.inFront[key] = struct{}{}
	l.frontPeak.Saw(len(l.inFront))
}

func (l *lanes) Len() int { return len(l.front) + len(l.back) - l.stale }

func (l *lanes) Pop() Key {
	key := l.next()
	if len(l.front) == 0 && len(l.back) == l.stale && l.stale > 0 {
		// Only the places of keys moved to the front are left: they would stay until the next key.
		l.back, l.moved, l.stale = nil, map[Key]int{}, 0
	}
	return key
}

func (l *lanes) next() Key {
	if len(l.front) > 0 {
		key := pop(&l.front)
		delete(l.inFront, key)
		if l.frontPeak.Drained(len(l.inFront)) {
			l.inFront = Remade(l.inFront) // give back what a backlog took
		}
		return key
	}
	for {
		key := pop(&l.back)
		if n := l.moved[key]; n > 0 {
			if n == 1 {
				delete(l.moved, key)
			} else {
				l.moved[key] = n - 1
			}
			l.stale--
			continue
		}
		return key
	}
}

// pop takes a lane's first key; an emptied lane lets its array go (a backlog's would stay).
func pop(s *[]Key) Key {
	key := (*s)[0]
	(*s)[0] = Key{} // let the key's strings go
	if *s = (*s)[1:]; len(*s) == 0 {
		*s = nil
	}
	return key
}
