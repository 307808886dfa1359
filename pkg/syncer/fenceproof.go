package syncer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// The syncer's proof that the edge owner's fence holds its executor, failing closed: a syncer that
// writes through an executor (syncer-gen's fence) writes nothing at the edge while the fence's policy
// or its binding is missing, or the edge does not enforce it (the downsync gate "fence").

// fenceDenies is what the fence's denials say (pkg/bootstrap's policy and the chart's).
const fenceDenies = "the edge owner's fence"

// fenceProofName names the object the proof asks to write (a dry run) in a namespace the fence keeps
// the executor out of.
const fenceProofName = "kubestellar-syncer-fence-proof"

// fenceProof proves the fence at start and with every heartbeat: as the executor, a server-side dry
// run of writes the fence must deny in the executor's own namespace (which it always protects): a
// ConfigMap's creation, then the Namespace's update. A denial by the fence proves it; an allowed
// write disproves it; a refusal by RBAC proves nothing, and the next write is tried; an error leaves
// the last answer (none yet: not in force).
type fenceProof struct {
	client    dynamic.Interface // as the executor
	namespace string
	metrics   *metrics.Metrics

	mu      sync.Mutex
	inForce bool
	why     string
}

// InForce tells whether the fence was last proven in force, and if not why.
func (p *fenceProof) InForce() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inForce, p.why
}

// prove asks the edge, and logs a change of answer.
func (p *fenceProof) prove(ctx context.Context) {
	inForce, why, err := p.ask(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.why == "" && !p.inForce {
			p.why = "not proven yet: " + err.Error()
		}
		klog.FromContext(ctx).V(logging.Change).Info("Could not prove the edge owner's fence; the last answer stands", "err", err.Error())
		return
	}
	switch {
	case inForce && !p.inForce:
		klog.FromContext(ctx).Info("The edge owner's fence is in force: writing at the edge")
	case !inForce && (p.inForce || p.why != why):
		klog.FromContext(ctx).Error(nil, "The edge owner's fence is not in force: writing nothing at the edge until it is", "reason", why)
	}
	p.inForce, p.why = inForce, why
	v := 0.0
	if inForce {
		v = 1
	}
	p.metrics.FenceInForce.WithLabelValues().Set(v)
}

// ask tries the proof's writes in turn; err when none gave an answer.
func (p *fenceProof) ask(ctx context.Context) (inForce bool, why string, err error) {
	dry := []string{metav1.DryRunAll}
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}
	cm.SetName(fenceProofName)
	cm.SetNamespace(p.namespace)
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(p.namespace)
	ns.SetLabels(map[string]string{"edge.kubestellar.io/fence-proof": "true"})
	writes := []struct {
		what string
		do   func() error
	}{
		{"create a ConfigMap in namespace " + p.namespace, func() error {
			_, err := p.client.Resource(configMaps).Namespace(p.namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: dry})
			return err
		}},
		{"change namespace " + p.namespace, func() error {
			_, err := p.client.Resource(wellknown.Namespaces).Apply(ctx, p.namespace, ns, metav1.ApplyOptions{DryRun: dry, FieldManager: fenceProofName, Force: true})
			return err
		}},
	}
	var notProven []string
	for _, w := range writes {
		switch err := w.do(); {
		case err == nil || apierrors.IsAlreadyExists(err):
			return false, fmt.Sprintf("the executor may %s (a dry run): the fence's ValidatingAdmissionPolicy or its binding is missing, or the edge does not enforce it", w.what), nil
		case strings.Contains(err.Error(), fenceDenies):
			return true, "", nil
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			notProven = append(notProven, fmt.Sprintf("%s: %v", w.what, err))
		default:
			return false, "", fmt.Errorf("%s: %w", w.what, err)
		}
	}
	return false, "no write the fence must deny could be tried as the executor (" + strings.Join(notProven, "; ") + ")", nil
}

// run proves the fence every period until ctx ends (at once first, by the caller); while it is not in
// force, sooner: after a second, doubling up to period (an edge that just applied its policy
// enforces it within seconds).
func (p *fenceProof) run(ctx context.Context, period time.Duration) {
	retry := time.Second
	for {
		wait := period
		if ok, _ := p.InForce(); !ok && retry < period {
			wait, retry = retry, 2*retry
		} else if ok {
			retry = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
			p.prove(ctx)
		}
	}
}

// fenceProofPeriod is how often the fence is proven: with every heartbeat (20 s without one).
func (s *Syncer) fenceProofPeriod() time.Duration {
	if p := s.cfg.HeartbeatPeriod; p > 0 {
		return p
	}
	return 20 * time.Second
}
