package support

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ParseMetrics reads Prometheus text exposition into "name{l1="v1",...}" -> value, for counters,
// gauges and untyped samples.
func ParseMetrics(r io.Reader) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Untyped != nil:
				out[key] = m.Untyped.GetValue()
			}
		}
	}
	return out, nil
}

// NSScope is a SyncerConfig spec selecting the given resources in the given namespaces.
func NSScope(namespaces []string, resources ...map[string]interface{}) map[string]interface{} {
	ns := make([]interface{}, len(namespaces))
	for i, n := range namespaces {
		ns[i] = n
	}
	res := make([]interface{}, len(resources))
	for i, r := range resources {
		res[i] = r
	}
	return map[string]interface{}{"namespaceScope": map[string]interface{}{"namespaces": ns, "resources": res}}
}

// Resource is one entry of a SyncerConfig's resource lists.
func Resource(group, version, res string) map[string]interface{} {
	return map[string]interface{}{"group": group, "apiVersion": version, "resource": res}
}

// FreeAddr returns a 127.0.0.1 address with a port nobody listens on right now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Busy lists the syncer's workqueues that hold items or are working on one, read from its metrics
// (ParseMetrics output): "name: depth d, in progress s".
func Busy(m map[string]float64) []string {
	queues := map[string]bool{}
	for k := range m {
		if name, ok := queueName(k, "workqueue_depth{"); ok {
			queues[name] = true
		}
	}
	var busy []string
	for name := range queues {
		depth := m[fmt.Sprintf("workqueue_depth{name=%q}", name)]
		unfinished := m[fmt.Sprintf("workqueue_unfinished_work_seconds{name=%q}", name)]
		if depth != 0 || unfinished != 0 {
			busy = append(busy, fmt.Sprintf("%s: depth %v, in progress %vs", name, depth, unfinished))
		}
	}
	sort.Strings(busy)
	return busy
}

func queueName(key, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+`name="`)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, `"`)
	return name, ok
}

// Activity sums the syncer's counters that move whenever it does anything: items added to its
// workqueues, requests other than WATCH, writes. Equal sums at two times mean nothing happened in
// between.
func Activity(m map[string]float64) float64 {
	total := 0.0
	for k, v := range m {
		switch {
		case strings.HasPrefix(k, "workqueue_adds_total{"),
			strings.HasPrefix(k, "kubestellar_syncer_writes_total{"),
			strings.HasPrefix(k, "kubestellar_syncer_api_requests_total{") && !strings.Contains(k, `verb="WATCH"`):
			total += v
		}
	}
	return total
}

// WaitSettled waits until the syncer whose metrics scrape returns has settled: no workqueue holds
// or works on an item, and its Activity has not moved for quiet. This is how a test lets the last
// events drain before it observes a quiet window (nothing must happen in it), instead of sleeping.
// Items waiting for a delayed requeue (backoff, rechecks) are not in the queues yet.
func WaitSettled(ctx context.Context, scrape func() (map[string]float64, error), quiet, timeout time.Duration) error {
	var (
		last        = -1.0
		since       time.Time
		lastProblem string
	)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		m, err := scrape()
		if err != nil {
			lastProblem = err.Error()
			return false, nil //nolint:nilerr // not a failure: scraping again until the timeout, which reports this error
		}
		if busy := Busy(m); len(busy) > 0 {
			last, lastProblem = -1, "busy: "+strings.Join(busy, "; ")
			return false, nil
		}
		if a := Activity(m); a != last {
			last, since, lastProblem = a, time.Now(), "still active"
			return false, nil
		}
		return time.Since(since) >= quiet, nil
	})
	if err != nil {
		return fmt.Errorf("the syncer did not settle within %v (%s): %w", timeout, lastProblem, err)
	}
	return nil
}
