package syncer

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/logging"
)

// An apiserver sets a CRD's Established condition before its discovery shows the resource: the two
// are written by different controllers, and under load the gap grows to seconds. A resolve asked for
// by the CRD's last event can fall into that gap, and no event follows it. So a resolve that finds a
// CRD Established on a side whose discovery does not show its resource yet asks for another, a
// little later each time (announcedRetry), until discovery shows it: the resource is then served, its
// informer starts and its objects that waited are enqueued.

const (
	// announcedRetryFirst is how soon a resolve that found discovery behind a CRD is tried again;
	// the wait doubles each time, up to announcedRetryMax.
	announcedRetryFirst = 250 * time.Millisecond
	announcedRetryMax   = 30 * time.Second
	// announcedTries is how many resolves are asked for one CRD at one resourceVersion (about a
	// minute in all): a CRD whose versions are all unserved is Established and never discovered.
	// A change of the CRD starts again.
	announcedTries = 8
)

// announced is what the resolver knows of each side's CRDs: their caches (none upstream through a
// Source), and how often it asked for a resolve for each CRD it found ahead of discovery.
type announced struct {
	up, down framework.Cache
	tries    map[string]int // "<side>/<name>@<resourceVersion>"
}

// retryIn tells how soon to resolve again: a CRD of either side is Established but that side's
// discovery (up, down: what this resolve read) does not serve its resource yet; 0 when none is.
func (a *announced) retryIn(ctx context.Context, up, down side) time.Duration {
	ahead := map[string]int{}
	a.collect(ahead, Upstream, a.up, up)
	a.collect(ahead, Downstream, a.down, down)
	wait, most := time.Duration(0), 0
	for key := range ahead {
		n := a.tries[key]
		if n >= announcedTries {
			ahead[key] = n // given up on: kept, so that it is not tried again at this version
			continue
		}
		ahead[key] = n + 1
		if n+1 > most {
			most = n + 1
		}
		klog.FromContext(ctx).V(logging.Skip).Info("A CRD is Established but discovery does not show its resource yet; resolving again soon",
			"crd", key, "try", n+1)
	}
	a.tries = ahead // CRDs discovered, gone or changed are forgotten
	if most > 0 {
		wait = min(announcedRetryFirst<<(most-1), announcedRetryMax)
	}
	return wait
}

// collect adds to ahead the CRDs of one side that are Established and whose resource that side's
// discovery does not show.
func (a *announced) collect(ahead map[string]int, name string, crds framework.Cache, s side) {
	if crds == nil || s.index == nil {
		return
	}
	for _, obj := range crds.List("") {
		crd := framework.ObjectOf(obj)
		if crd == nil || !established(crd) {
			continue
		}
		plural, group, ok := strings.Cut(crd.GetName(), ".")
		if !ok {
			continue
		}
		if _, served := s.index.Lookup(schema.GroupResource{Group: group, Resource: plural}, ""); !served {
			ahead[name+"/"+crd.GetName()+"@"+crd.GetResourceVersion()] = 0
		}
	}
}

// established tells whether a CRD (as the API caches keep it: conditions only) is Established.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]interface{}); ok && m["type"] == "Established" {
			return m["status"] == "True"
		}
	}
	return false
}
