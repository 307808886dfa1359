package syncer

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/conditions"
	"github.com/kubestellar/syncer/pkg/credential"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/report"
)

// Ready tells whether the syncer is doing its job: started, the selection resolved, every informer
// synced, and both sides reachable. The error says what is missing.
func (s *Syncer) Ready() error {
	if !s.started.Load() || !s.resolved.Load() {
		return fmt.Errorf("not started: waiting for the SyncerConfigs and CRDs to be listed")
	}
	for _, side := range s.sides() {
		if running, synced := side.m.Counts(); synced < running {
			return fmt.Errorf("%d of %d %s informers not synced yet", running-synced, running, side.name)
		}
		if n := side.m.Reconnecting(); n > 0 {
			return fmt.Errorf("%d %s informers lost their watch and have not listed or watched again yet", n, side.name)
		}
	}
	for _, side := range []string{Upstream, Downstream} {
		if ok, lastErr, since := s.reachable(side); !ok {
			return fmt.Errorf("%s unreachable since %s: %s", side, since.Format(time.RFC3339), lastErr)
		}
	}
	return nil
}

type namedSide struct {
	name string
	m    *informermanager.Manager
}

func (s *Syncer) sides() []namedSide { return []namedSide{{Upstream, s.up}, {Downstream, s.down}} }

func (s *Syncer) updateInformerGauges() {
	if s.cfg.Embedded {
		return // the owner of the shared informers counts them
	}
	for _, side := range s.sides() {
		running, synced := side.m.Counts()
		s.cfg.Metrics.InformersRunning.WithLabelValues(side.name).Set(float64(running))
		s.cfg.Metrics.InformersSynced.WithLabelValues(side.name).Set(float64(synced))
	}
}

// countObjects reports objects_managed: owned edge objects per downsynced resource, and upstream
// copies per upsynced resource. It runs at scrape time over the caches.
func (s *Syncer) countObjects(add func(direction, resource string, n int)) {
	st := s.snapshot()
	for gr, r := range st.resources {
		if c, ok := framework.SyncedCache(s.down, r.Downstream.GVR, ""); ok && r.ServedDownstream() {
			add(metrics.Downsync, gr.String(), countCached(c, mapping.OwnedDownstream))
		}
	}
	for gr, r := range st.upsync {
		if c, ok := framework.SyncedCache(s.up, r.Upstream.GVR, ""); ok {
			add(metrics.Upsync, gr.String(), countCached(c, func(u *unstructured.Unstructured) bool {
				return mapping.ClaimOf(u, s.ownerLabel) == mapping.UpsyncedByUs
			}))
		}
	}
}

// countCached counts the objects of a cache that satisfy pred.
func countCached(c framework.Cache, pred func(*unstructured.Unstructured) bool) int {
	n := 0
	for _, obj := range c.List("") {
		if u := framework.MetaOf(obj); u != nil && pred(u) {
			n++
		}
	}
	return n
}

// sources is what the conditions are computed from: the current snapshot's problems, the
// controllers' failing keys and conflicts, and the sides' reachability.
type sources struct{ s *Syncer }

// SelectionProblems are the snapshot's, the resources either side refuses to list or watch, listed
// namespaces missing upstream, and namespaces terminating at the edge that hold objects up.
func (src sources) SelectionProblems() []problem.Problem {
	st := src.s.snapshot()
	out := append([]problem.Problem(nil), st.problems...)
	out = append(append(out, src.s.up.Problems()...), src.s.down.Problems()...)
	if c, ok := framework.SyncedCache(src.s.up, namespaceGVR, ""); ok {
		for ns, origins := range st.selection.NamedNamespaces() {
			if obj, err := c.Get("", ns); err == nil && obj == nil {
				for _, o := range origins {
					out = append(out, o.Problem(problem.NamespaceMissing, namespaceGVR.GroupResource(), fmt.Sprintf("namespace %q does not exist upstream", ns)))
				}
			}
		}
	}
	return append(out, src.s.downsync.Waiting()...)
}

func (src sources) ObjectProblems(limit int) (failing, conflicts int, examples []problem.Problem) {
	for _, q := range []interface {
		Failures(int) (int, []problem.Problem)
	}{src.s.downsync.Queue(), src.s.status.Queue(), src.s.upsync.Queue(), loopView{src.s.downsync.Writes()}, loopView{src.s.upsync.Writes()},
		problemsView{src.s.downsync.Withheld()}, problemsView{src.s.downsync.Kept()}, problemsView{src.s.downsync.Full()}, problemsView{src.s.upsync.Withheld()}} {
		n, ex := q.Failures(limit)
		failing += n
		examples = append(examples, ex...)
	}
	for _, w := range []interface {
		Problems(int) (int, []problem.Problem)
	}{src.s.downsync.Writes().Conflicts(), src.s.status.Writes().Conflicts(), src.s.upsync.Writes().Conflicts()} {
		n, ex := w.Problems(limit)
		conflicts += n
		examples = append(examples, ex...)
	}
	return failing, conflicts, examples
}

// problemsView shows a log of refusals as failures.
type problemsView struct{ l *framework.ConflictLog }

func (v problemsView) Failures(limit int) (int, []problem.Problem) { return v.l.Problems(limit) }

// loopView shows a write path's loops as problems.
type loopView struct {
	w interface {
		Loops(int) (int, []problem.Problem)
	}
}

func (v loopView) Failures(limit int) (int, []problem.Problem) { return v.w.Loops(limit) }

func (src sources) DeletionsHeld(limit int) (bool, time.Time, int, []string) {
	src.s.deletions.Observe() // with every heartbeat: the base remembers the minutes without deletions
	st := src.s.deletions.State(limit)
	src.s.cfg.Metrics.DeletionsHeld.Set(float64(st.Held))
	ex := make([]string, 0, len(st.Examples))
	for _, k := range st.Examples {
		ex = append(ex, k.String())
	}
	return st.Tripped, st.Since, st.Held, ex
}

func (src sources) ReleaseHow(count string) string { return src.s.releaseHow(count) }

func (src sources) Fence() (required, inForce bool, why string) {
	if src.s.fence == nil {
		return false, false, ""
	}
	inForce, why = src.s.fence.InForce()
	return true, inForce, why
}

func (src sources) Report(limit int) *report.Summary {
	if !src.s.cfg.ReportOnly && !src.s.snapshot().selection.SomeReportOnly() {
		return nil
	}
	sum := src.s.report.Summary(limit, conditions.MaxReportChanges)
	return &sum
}

func (src sources) Reachability(side string) (bool, string, time.Time) {
	return src.s.reachable(side)
}

func (src sources) Credential() credential.State {
	if src.s.cfg.Credential == nil {
		return credential.State{}
	}
	return src.s.cfg.Credential.State()
}
