package conditions

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/report"
)

// Config is what New needs.
type Config struct {
	// Upstream writes the configs' status.
	Upstream dynamic.Interface
	// Configs lists the SyncerConfigs and EdgeSyncConfigs as cached (they are not mutated), each
	// with its kind.
	Configs func() []*unstructured.Unstructured
	Sources Sources
	Metrics *metrics.Metrics
	// FieldManager owns the status fields the heartbeat applies; with a SyncTarget,
	// FieldManager/SyncTarget does, so that the syncers of several sync targets reading one config
	// keep their entries of status.syncTargets apart.
	FieldManager string
	// SyncTarget names this syncer's entry in each config's status.syncTargets.
	SyncTarget string
	// Refresh, when positive, is how old the heartbeat on a config may grow while nothing else in
	// its status changes: a beat that would write the same status over a younger heartbeat writes
	// nothing (current). 0: every beat writes.
	Refresh time.Duration
}

// Heartbeat writes the heartbeat and conditions on every SyncerConfig and EdgeSyncConfig.
type Heartbeat struct {
	cfg     Config
	period  time.Duration // Run's: how recent another sync target's heartbeat must be to count
	failing bool          // the last beat failed (Run's goroutine only)
	// missing are the missing-namespace warnings logged already (Run's goroutine only): they are
	// found here, from the upstream cache at each beat, not by a resolve, so they are logged here.
	missing map[string]bool
}

// New returns a Heartbeat; it does no API I/O.
func New(cfg Config) (*Heartbeat, error) {
	if cfg.Upstream == nil || cfg.Configs == nil || cfg.Sources == nil || cfg.Metrics == nil || cfg.FieldManager == "" {
		return nil, errors.New("conditions: every Config field is required")
	}
	return &Heartbeat{cfg: cfg, period: defaultPeriod}, nil
}

// defaultPeriod is the heartbeat period assumed before Run (a Beat called directly).
const defaultPeriod = 20 * time.Second

// Run beats every period until ctx is done.
func (h *Heartbeat) Run(ctx context.Context, period time.Duration) {
	h.period = period
	wait.UntilWithContext(ctx, h.Beat, period)
}

// fieldManager is the field manager of the heartbeat's applies.
func (h *Heartbeat) fieldManager() string {
	if h.cfg.SyncTarget == "" {
		return h.cfg.FieldManager
	}
	return h.cfg.FieldManager + "/" + h.cfg.SyncTarget
}

// Beat writes lastSyncerHeartbeatTime and the conditions on every SyncerConfig and EdgeSyncConfig: a
// server-side apply of the status subresource each, so that conditions merge by type. A condition keeps its
// lastTransitionTime while its status holds. A config whose status is already what the beat would
// write, under a heartbeat younger than Config.Refresh, is not written (it counts as written: the
// upstream shows the syncer's state).
func (h *Heartbeat) Beat(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := metav1.Now()
	shared := Shared(h.cfg.Sources)
	summary := h.cfg.Sources.Report(MaxReportObjects)
	problems := h.cfg.Sources.SelectionProblems()
	h.logMissingNamespaces(logger, problems)
	failed := 0
	for _, cfg := range h.cfg.Configs() {
		kind, gvr := KindOf(cfg)
		body := StatusApply(cfg, h.cfg.SyncTarget, ForConfig(kind, cfg.GetName(), cfg.GetGeneration(), problems, shared), now, 3*max(h.period, h.cfg.Refresh))
		if kind == problem.SyncerConfig {
			withReport(body, summary)
		}
		if h.cfg.Refresh > 0 && current(cfg, body, h.cfg.SyncTarget, now.Time, h.cfg.Refresh) {
			logger.V(logging.Trace).Info("Heartbeat unchanged and fresh; not written", problem.ConfigKeysAndValues(kind, cfg.GetName())...)
			continue
		}
		_, err := h.cfg.Upstream.Resource(gvr).ApplyStatus(ctx, cfg.GetName(), body,
			metav1.ApplyOptions{FieldManager: h.fieldManager(), Force: true})
		if apierrors.IsNotFound(err) {
			logger.V(logging.Trace).Info("Config deleted meanwhile; no heartbeat for it", problem.ConfigKeysAndValues(kind, cfg.GetName())...)
			continue
		}
		if err != nil {
			failed++
			if !h.failing && ctx.Err() == nil {
				logger.Error(err, "Could not write the heartbeat", problem.ConfigKeysAndValues(kind, cfg.GetName())...)
			}
			continue
		}
		logger.V(logging.Trace).Info("Heartbeat written", problem.ConfigKeysAndValues(kind, cfg.GetName())...)
	}
	if failed == 0 {
		h.cfg.Metrics.LastHeartbeat.SetToCurrentTime()
		if h.failing {
			logger.Info("Heartbeat written again")
		}
	}
	h.failing = failed > 0
}

// KindOf tells which kind of config a cached config is, and the resource that serves it.
func KindOf(cfg *unstructured.Unstructured) (kind string, gvr schema.GroupVersionResource) {
	if cfg.GetKind() == problem.EdgeSyncConfig {
		return problem.EdgeSyncConfig, edgev1.EdgeSyncConfigGVR
	}
	return problem.SyncerConfig, edgev1.SyncerConfigResource
}

// logMissingNamespaces logs each missing-namespace warning once, at level 0, when it appears (again).
func (h *Heartbeat) logMissingNamespaces(logger klog.Logger, problems []problem.Problem) {
	now := map[string]bool{}
	for _, p := range problems {
		if p.Kind != problem.NamespaceMissing {
			continue
		}
		text := p.String()
		now[text] = true
		if !h.missing[text] {
			logger.Info("Selection warning", append([]interface{}{"problem", text, "kind", p.Kind}, problem.ConfigKeysAndValues(p.ConfigKind, p.Config)...)...)
		}
	}
	h.missing = now
}

// StatusApply is the apply configuration of a SyncerConfig's status as sync target target writes it:
// its entry in status.syncTargets (its heartbeat and conds), and the heartbeat time and conditions of
// the config itself, conds summed up with the entries of other sync targets whose heartbeat is more
// recent than fresh (summed); each condition keeps the lastTransitionTime it has on cfg while its
// status holds. Without a target, the config's own status only.
func StatusApply(cfg *unstructured.Unstructured, target string, conds []metav1.Condition, now metav1.Time, fresh time.Duration) *unstructured.Unstructured {
	existing, _, _ := unstructured.NestedSlice(cfg.Object, "status", "conditions")
	entries := targetEntries(cfg)
	var others []targetEntry
	for name, e := range entries {
		if name != target && now.Sub(e.heartbeat) <= fresh {
			others = append(others, e)
		}
	}
	status := map[string]interface{}{
		"lastSyncerHeartbeatTime": now.UTC().Format(time.RFC3339),
		"conditions":              toUnstructured(withTransitions(summed(target, conds, others), readConditions(existing), now)),
	}
	if target != "" {
		status["syncTargets"] = []interface{}{map[string]interface{}{
			"name": target, "lastSyncerHeartbeatTime": now.UTC().Format(time.RFC3339),
			"conditions": toUnstructured(withTransitions(conds, entries[target].conditions, now)),
		}}
	}
	body := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": cfg.GetAPIVersion(), "kind": cfg.GetKind(), "status": status,
	}}
	body.SetName(cfg.GetName())
	return body
}

// MaxReportObjects and MaxReportChanges bound the report a SyncerConfig's status holds (the whole one
// is at /report).
const (
	MaxReportObjects = 50
	MaxReportChanges = 10
)

// withReport puts the report-only summary (nil: none) in the sync target's entry of a status apply
// configuration; without an entry, nothing.
func withReport(body *unstructured.Unstructured, summary *report.Summary) {
	entries, _, _ := unstructured.NestedSlice(body.Object, "status", "syncTargets")
	if summary == nil || len(entries) != 1 {
		return
	}
	data, err := json.Marshal(summary)
	var m map[string]interface{}
	if err != nil || json.Unmarshal(data, &m) != nil {
		return
	}
	entries[0].(map[string]interface{})["report"] = m
	_ = unstructured.SetNestedSlice(body.Object, entries, "status", "syncTargets")
}

// toUnstructured is conditions as an apply configuration holds them.
func toUnstructured(conds []metav1.Condition) []interface{} {
	out := make([]interface{}, 0, len(conds))
	for i := range conds {
		if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i]); err == nil {
			out = append(out, m)
		}
	}
	return out
}
