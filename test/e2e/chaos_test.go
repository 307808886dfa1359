package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/testenv"
)

// The fault suite: the syncer killed again and again under a steady writer, and watches expired (410
// Gone) while the syncer was frozen; outage_test.go has apiservers hung, killed and restarted. Each
// ends with an audit of both sides: nothing missing, nothing extra, nothing stale, and an object the
// syncer does not own never touched.

// kill sends SIGKILL to the syncer and waits for it to die: no shutdown, no Lease release.
func (p *syncerProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// signal sends sig to the syncer (SIGSTOP freezes it, SIGCONT resumes it).
func (p *syncerProc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signalling the syncer: %v", err)
	}
}

// writer changes ConfigMaps named w-000 ... on one side (through the clients side returns at each
// change) in some namespaces, one change every interval (create when absent, else update or, one time in five, delete), until stopped. It is
// bounded: it stops by itself after max changes. Its random choices are seeded with seed.
type writer struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	changes int
	errors  int
}

// highChurn runs the syncer without the deletion breaker, for the tests whose writers delete several
// objects a second out of a few dozen: far past the breaker's limits, by design. The breaker is
// tested on its own (TestDeletionBreaker).
var highChurn = withArgs("--deletion-breaker-count=0")

func startWriter(f *fixture, side func() clients, namespaces []string, names int, interval time.Duration, maxChanges int, seed int64) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		rng := rand.New(rand.NewSource(seed))
		for i := 0; i < maxChanges; i++ {
			select {
			case <-w.stop:
				return
			case <-time.After(interval):
			}
			ns := namespaces[rng.Intn(len(namespaces))]
			client := side().dyn.Resource(gvrConfigMaps).Namespace(ns)
			name := fmt.Sprintf("w-%03d", rng.Intn(names))
			// Each request gives up after a few seconds: a hung apiserver answers nothing.
			ctx, cancel := context.WithTimeout(f.ctx, 3*time.Second)
			cur, err := client.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err = client.Create(ctx, configMap(ns, name, map[string]interface{}{"v": fmt.Sprint(i)}), metav1.CreateOptions{})
			case err != nil:
			case rng.Intn(5) == 0:
				err = client.Delete(ctx, name, metav1.DeleteOptions{})
			default:
				cur.Object["data"] = map[string]interface{}{"v": fmt.Sprint(i)}
				_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
			}
			cancel()
			w.mu.Lock()
			w.changes++
			if err != nil {
				w.errors++
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) halt() (changes, errors int) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes, w.errors
}

// audit compares the ConfigMaps of one namespace on both sides: every upstream one (the apiservers'
// own kube-root-ca.crt and the names in skip aside) must be at the edge with the syncer's mark and
// the same data; every owned one at the edge must exist upstream. It returns what differs.
func (f *fixture) audit(ns string, skip ...string) (missing, extra, stale []string) {
	skipped := map[string]bool{"kube-root-ca.crt": true}
	for _, s := range skip {
		skipped[s] = true
	}
	up, down := f.configMaps(f.up, ns), f.configMaps(f.down, ns)
	for name, u := range up {
		if skipped[name] {
			continue
		}
		d := down[name]
		switch {
		case d == nil || !mapping.OwnedDownstream(d):
			missing = append(missing, name)
		case fmt.Sprint(d.Object["data"]) != fmt.Sprint(u.Object["data"]):
			stale = append(stale, name)
		}
	}
	for name, d := range down {
		if !skipped[name] && mapping.OwnedDownstream(d) && up[name] == nil {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(stale)
	return missing, extra, stale
}

// configMaps are a namespace's ConfigMaps on one side, by name.
func (f *fixture) configMaps(c clients, ns string) map[string]*unstructured.Unstructured {
	l, err := c.dyn.Resource(gvrConfigMaps).Namespace(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatalf("listing ConfigMaps: %v", err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		out[l.Items[i].GetName()] = &l.Items[i]
	}
	return out
}

// waitConverged waits until the audit of ns finds nothing, and fails with what it found otherwise.
func (f *fixture) waitConverged(ns string, timeout time.Duration, skip ...string) {
	f.t.Helper()
	eventually(f.t, timeout, "both sides to agree", func() (bool, string) {
		missing, extra, stale := f.audit(ns, skip...)
		return len(missing)+len(extra)+len(stale) == 0, fmt.Sprintf("missing %v, extra %v, stale %v", missing, extra, stale)
	})
}

// unownedAtEdge puts an object of a name the upstream also has at the edge, without the syncer's
// mark, and returns a check that it was never touched.
func (f *fixture) unownedAtEdge(ns, name string) func() {
	f.t.Helper()
	f.create(f.up, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"v": "upstream"}))
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
	mine := f.create(f.down, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"v": "the edge's own"}))
	return func() {
		f.t.Helper()
		now, err := f.get(f.down, gvrConfigMaps, ns, name)
		if err != nil || now.GetResourceVersion() != mine.GetResourceVersion() {
			f.t.Errorf("the unowned edge object was touched: %v, resourceVersion %s -> %s", err, mine.GetResourceVersion(), now.GetResourceVersion())
		}
	}
}

// TestFaultKillRoundsUnderWriter: the syncer is SIGKILLed at random moments, five times, while a
// writer keeps changing objects upstream. After the last restart both sides agree: no object lost,
// none left over, none stale, and the edge object it does not own untouched.
func TestFaultKillRoundsUnderWriter(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	untouched := f.unownedAtEdge(ns, "unowned")
	for i := 0; i < 40; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("w-%03d", i), map[string]interface{}{"v": "seed"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	up := f.up
	w := startWriter(f, func() clients { return up }, []string{ns}, 60, 20*time.Millisecond, 5000, 1)
	t.Cleanup(func() { w.halt() })
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	const rounds = 5
	for i := 0; i < rounds; i++ {
		p := f.startSyncer(highChurn)
		// Fault injection, not a wait: the kill lands at a random point of the syncer's work.
		time.Sleep(time.Duration(1000+rng.Intn(2500)) * time.Millisecond)
		p.kill()
		if strings.Contains(p.logText(), "panic") {
			t.Fatalf("round %d: the syncer panicked:\n%s", i, p.tail(40))
		}
	}
	p := f.startSyncer(highChurn)
	changes, errs := w.halt()
	f.waitConverged(ns, 60*time.Second, "unowned")
	untouched()
	if p.exited() {
		t.Fatal("the syncer exited")
	}
	t.Logf("%d rounds of SIGKILL under %d upstream changes (%d refused, as a racing writer's are): both sides agree", rounds, changes, errs)
}

// TestFaultWatchExpired: the syncer is frozen (SIGSTOP) while objects change on both sides (upstream
// changes, and drift and deletions of its own objects at the edge); meanwhile the edge's
// kube-apiserver restarts (its watch cache starts afresh; on a kube upstream, the upstream's too) and
// etcd is compacted, so the watches it resumes are too old (410 Gone). It must relist and catch up.
func TestFaultWatchExpired(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	untouched := f.unownedAtEdge(ns, "unowned")
	const n = 100
	for i := 0; i < n; i++ {
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("c-%03d", i), map[string]interface{}{"v": "1"}))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	p := f.startSyncer()
	f.waitConverged(ns, 60*time.Second, "unowned")

	p.signal(syscall.SIGSTOP)
	frozen := true
	t.Cleanup(func() {
		if frozen {
			p.signal(syscall.SIGCONT)
		}
	})
	changes := 0
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c-%03d", i)
		switch i % 4 {
		case 0:
			f.delete(f.up, gvrConfigMaps, ns, name)
		case 1:
			f.update(f.up, gvrConfigMaps, ns, name, func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"v": "2"} })
		case 2: // drift at the edge
			f.update(f.down, gvrConfigMaps, ns, name, func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"v": "drifted"} })
		case 3: // deleted at the edge by someone else
			f.delete(f.down, gvrConfigMaps, ns, name)
		}
		f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("n-%03d", i), map[string]interface{}{"v": "new"}))
		changes += 2
	}
	servers := []*testenv.Server{env.Downstream}
	if !upstreamIsKCP() {
		servers = append(servers, env.Upstream)
	}
	for _, s := range servers {
		if err := env.RestartAPIServer(f.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := env.CompactEtcd(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGCONT)
	frozen = false
	f.waitConverged(ns, 90*time.Second, "unowned")
	untouched()
	if p.exited() {
		t.Fatal("the syncer exited")
	}
	log := p.logText()
	expired := strings.Count(log, "too old resource version") + strings.Count(log, "has been compacted")
	t.Logf("%d changes while frozen, %d apiservers restarted, etcd compacted at revision %d; %d watches told they were too old; both sides agree",
		changes, len(servers), rev, expired)
	if expired == 0 {
		t.Errorf("no watch was told it was too old (410): the test did not test what it says; log tail:\n%s", p.tail(30))
	}
}
