package framework

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/metrics"
)

// An Event about no object (a nil *unstructured.Unstructured: the upstream object is gone) is not
// recorded; client-go's recorder would panic on it.
func TestEventAboutNoObject(t *testing.T) {
	b := record.NewBroadcaster()
	defer b.Shutdown()
	w := NewWrites("downsync", DefaultFieldManager, metrics.New(prometheus.NewRegistry()), b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "test"}))
	var gone *unstructured.Unstructured
	w.Event(gone, corev1.EventTypeNormal, "Resumed", "the pause ended")
}
