package conditions

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	// FieldManager owns the status fields the heartbeat applies.
	FieldManager string
}

// Heartbeat writes the heartbeat and conditions on every SyncerConfig and EdgeSyncConfig.
type Heartbeat struct {
	cfg     Config
	failing bool // the last beat failed (Run's goroutine only)
	// missing are the missing-namespace warnings logged already (Run's goroutine only): they are
	// found here, from the upstream cache at each beat, not by a resolve, so they are logged here.
	missing map[string]bool
}

// New returns a Heartbeat; it does no API I/O.
func New(cfg Config) (*Heartbeat, error) {
	if cfg.Upstream == nil || cfg.Configs == nil || cfg.Sources == nil || cfg.Metrics == nil || cfg.FieldManager == "" {
		return nil, errors.New("conditions: every Config field is required")
	}
	return &Heartbeat{cfg: cfg}, nil
}

// Run beats every period until ctx is done.
func (h *Heartbeat) Run(ctx context.Context, period time.Duration) {
	wait.UntilWithContext(ctx, h.Beat, period)
}

// Beat writes lastSyncerHeartbeatTime and the conditions on every SyncerConfig and EdgeSyncConfig: a
// server-side apply of the status subresource each, so that conditions merge by type. A condition keeps its
// lastTransitionTime while its status holds.
func (h *Heartbeat) Beat(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := metav1.Now()
	shared := Shared(h.cfg.Sources)
	problems := h.cfg.Sources.SelectionProblems()
	h.logMissingNamespaces(logger, problems)
	failed := 0
	for _, cfg := range h.cfg.Configs() {
		kind, gvr := KindOf(cfg)
		body := StatusApply(cfg, ForConfig(kind, cfg.GetName(), cfg.GetGeneration(), problems, shared), now)
		_, err := h.cfg.Upstream.Resource(gvr).ApplyStatus(ctx, cfg.GetName(), body,
			metav1.ApplyOptions{FieldManager: h.cfg.FieldManager, Force: true})
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

// StatusApply is the apply configuration of a SyncerConfig's status: the heartbeat time and the
// conditions, each keeping the lastTransitionTime it has on cfg while its status holds.
func StatusApply(cfg *unstructured.Unstructured, conds []metav1.Condition, now metav1.Time) *unstructured.Unstructured {
	var existing []metav1.Condition
	if raw, found, _ := unstructured.NestedSlice(cfg.Object, "status", "conditions"); found {
		for _, c := range raw {
			var cond metav1.Condition
			if m, ok := c.(map[string]interface{}); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
				existing = append(existing, cond)
			}
		}
	}
	out := make([]interface{}, 0, len(conds))
	for _, c := range conds {
		merged := append([]metav1.Condition(nil), existing...)
		c.LastTransitionTime = now
		meta.SetStatusCondition(&merged, c)
		cond := *meta.FindStatusCondition(merged, c.Type)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cond)
		if err == nil {
			out = append(out, m)
		}
	}
	body := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": cfg.GetAPIVersion(), "kind": cfg.GetKind(),
		"status": map[string]interface{}{"lastSyncerHeartbeatTime": now.UTC().Format(time.RFC3339), "conditions": out},
	}}
	body.SetName(cfg.GetName())
	return body
}
