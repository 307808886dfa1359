package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// Condition types written on every SyncerConfig's status.
const (
	ConditionReady               = "Ready"
	ConditionSelectionValid      = "SelectionValid"
	ConditionObjectsSynced       = "ObjectsSynced"
	ConditionUpstreamReachable   = "UpstreamReachable"
	ConditionDownstreamReachable = "DownstreamReachable"
)

// Bounds on what a condition message lists, so that a thousand failing objects make a short status.
const (
	maxExamples   = 5
	maxMessageLen = 1024
)

// countObjects reports objects_managed: owned edge objects per downsynced resource, and upstream
// copies per upsynced resource. It runs at scrape time over the caches.
func (s *Syncer) countObjects(add func(direction, resource string, n int)) {
	st := s.snapshot()
	for gr, r := range st.resources {
		if inf, ok := s.down.Synced(r.Downstream.GVR); ok && r.ServedDownstream() {
			add(metrics.Downsync, gr.String(), countCached(inf, mapping.OwnedDownstream))
		}
	}
	for gr, r := range st.upsync {
		if inf, ok := s.up.Synced(r.Upstream.GVR); ok {
			add(metrics.Upsync, gr.String(), countCached(inf, mapping.OwnedUpstream))
		}
	}
}

// countCached counts the objects of an informer's cache that satisfy pred.
func countCached(inf cache.SharedIndexInformer, pred func(*unstructured.Unstructured) bool) int {
	n := 0
	for _, obj := range inf.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok && pred(u) {
			n++
		}
	}
	return n
}

func informerCounts(m *informermanager.Manager) (running, synced int) {
	for _, gvr := range m.Running() {
		running++
		if _, ok := m.Synced(gvr); ok {
			synced++
		}
	}
	return running, synced
}

func (s *Syncer) updateInformerGauges() {
	for side, m := range map[string]*informermanager.Manager{Upstream: s.up, Downstream: s.down} {
		running, synced := informerCounts(m)
		s.cfg.Metrics.InformersRunning.WithLabelValues(side).Set(float64(running))
		s.cfg.Metrics.InformersSynced.WithLabelValues(side).Set(float64(synced))
	}
}

// Ready tells whether the syncer is doing its job: started, the selection resolved, every informer
// synced, and both sides reachable. The error says what is missing.
func (s *Syncer) Ready() error {
	if !s.started.Load() || !s.resolved.Load() {
		return fmt.Errorf("not started: waiting for the SyncerConfigs and CRDs to be listed")
	}
	for side, m := range map[string]*informermanager.Manager{Upstream: s.up, Downstream: s.down} {
		if running, synced := informerCounts(m); synced < running {
			return fmt.Errorf("%d of %d %s informers not synced yet", running-synced, running, side)
		}
	}
	for _, side := range []string{Upstream, Downstream} {
		if ok, lastErr, since := s.cfg.Metrics.Reachability(side); !ok {
			return fmt.Errorf("%s unreachable since %s: %s", side, since.Format(time.RFC3339), lastErr)
		}
	}
	return nil
}

type condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
	LastTransitionTime string `json:"lastTransitionTime"`
}

// bounded lists up to maxExamples items, says how many more there are, and caps the length.
func bounded(items []string, total int) string {
	shown := items
	if len(shown) > maxExamples {
		shown = shown[:maxExamples]
	}
	msg := strings.Join(shown, "; ")
	if total > len(shown) {
		more := fmt.Sprintf("; and %d more", total-len(shown))
		return capLen(msg, maxMessageLen-len(more)) + more
	}
	return capLen(msg)
}

// capLen cuts a message to maxMessageLen characters (or the given limit).
func capLen(msg string, limit ...int) string {
	n := maxMessageLen
	if len(limit) > 0 {
		n = limit[0]
	}
	if len(msg) > n {
		return msg[:n-3] + "..."
	}
	return msg
}

// conditions computes the conditions for one SyncerConfig from its own selection problems (those
// that name another config are left to that config) and the conditions all configs share.
func (s *Syncer) conditions(configName string, shared []condition) []condition {
	var out []condition
	st := s.snapshot()
	var problems []string
	for _, p := range st.problems {
		if strings.Contains(p, "SyncerConfig ") && !strings.Contains(p, "SyncerConfig "+configName+":") && !strings.Contains(p, "SyncerConfig \""+configName+"\"") {
			continue
		}
		problems = append(problems, p)
	}
	if len(problems) == 0 {
		out = append(out, condition{Type: ConditionSelectionValid, Status: "True", Reason: "Resolved", Message: "Every selected resource is served on both sides."})
	} else {
		out = append(out, condition{Type: ConditionSelectionValid, Status: "False", Reason: "SelectionProblems", Message: bounded(problems, len(problems))})
	}
	out = append(out, shared...)
	ready := condition{Type: ConditionReady, Status: "True", Reason: "Syncing", Message: "The syncer is running and every condition holds."}
	for _, c := range out {
		if c.Status != "True" {
			ready = condition{Type: ConditionReady, Status: "False", Reason: c.Reason, Message: "See condition " + c.Type + "."}
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return append([]condition{ready}, out...)
}

// sharedConditions are the conditions that are the same on every SyncerConfig: objects failing or
// in conflict, and reachability. The heartbeat computes them once per beat.
func (s *Syncer) sharedConditions() []condition {
	var out []condition
	var examples []string
	failing := 0
	for _, q := range []interface{ Failures(int) (int, []string) }{s.downsync.queue, s.status.Queue(), s.upsync.Queue()} {
		n, ex := q.Failures(maxExamples)
		failing += n
		examples = append(examples, ex...)
	}
	conflicts := 0
	for _, cl := range []interface{ Count(int) (int, []string) }{&s.downsync.conflicts, s.upsync.Conflicts()} {
		n, ex := cl.Count(maxExamples)
		conflicts += n
		examples = append(examples, ex...)
	}
	sort.Strings(examples)
	if failing+conflicts == 0 {
		out = append(out, condition{Type: ConditionObjectsSynced, Status: "True", Reason: "Synced", Message: "No object is failing to sync."})
	} else {
		out = append(out, condition{Type: ConditionObjectsSynced, Status: "False", Reason: "SyncFailures",
			Message: capLen(fmt.Sprintf("%d objects failing to sync, %d conflicts with objects the syncer does not own. Examples: %s",
				failing, conflicts, bounded(examples, failing+conflicts)))})
	}
	for side, typ := range map[string]string{Upstream: ConditionUpstreamReachable, Downstream: ConditionDownstreamReachable} {
		if ok, lastErr, since := s.cfg.Metrics.Reachability(side); ok {
			out = append(out, condition{Type: typ, Status: "True", Reason: "Reachable", Message: "The last request got a response."})
		} else {
			out = append(out, condition{Type: typ, Status: "False", Reason: "Unreachable",
				Message: bounded([]string{fmt.Sprintf("unreachable since %s: %s", since.UTC().Format(time.RFC3339), lastErr)}, 1)})
		}
	}
	return out
}

// heartbeat writes lastSyncerHeartbeatTime and the conditions on every SyncerConfig (a merge patch
// of the status subresource each). A condition keeps its lastTransitionTime while its status holds.
func (s *Syncer) heartbeat(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := metav1.Now().UTC().Format(time.RFC3339)
	failed := 0
	shared := s.sharedConditions()
	for _, obj := range s.configInformer.GetStore().List() {
		cfg, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		previous := map[string]condition{}
		if old, found, _ := unstructured.NestedSlice(cfg.Object, "status", "conditions"); found {
			for _, c := range old {
				if m, ok := c.(map[string]interface{}); ok {
					t, _ := m["type"].(string)
					st, _ := m["status"].(string)
					lt, _ := m["lastTransitionTime"].(string)
					previous[t] = condition{Status: st, LastTransitionTime: lt}
				}
			}
		}
		conds := s.conditions(cfg.GetName(), shared)
		for i := range conds {
			if p, ok := previous[conds[i].Type]; ok && p.Status == conds[i].Status && p.LastTransitionTime != "" {
				conds[i].LastTransitionTime = p.LastTransitionTime
			} else {
				conds[i].LastTransitionTime = now
			}
		}
		patch, err := json.Marshal(map[string]interface{}{"status": map[string]interface{}{"lastSyncerHeartbeatTime": now, "conditions": conds}})
		if err != nil {
			continue
		}
		_, err = s.cfg.UpstreamDynamic.Resource(edgev1.SyncerConfigResource).Patch(ctx, cfg.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			failed++
			if !s.heartbeatFailing {
				logger.Error(err, "Could not write the heartbeat", "syncerConfig", cfg.GetName())
			}
			continue
		}
		logger.V(logging.Trace).Info("Heartbeat written", "syncerConfig", cfg.GetName())
	}
	if failed == 0 {
		s.cfg.Metrics.LastHeartbeat.SetToCurrentTime()
		if s.heartbeatFailing {
			logger.Info("Heartbeat written again")
		}
	}
	s.heartbeatFailing = failed > 0
}
