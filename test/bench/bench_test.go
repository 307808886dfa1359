package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"
)

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{50: 5, 95: 10, 99: 10, 10: 1} {
		if got := percentile(v, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}

func TestFillRate(t *testing.T) {
	t0 := time.Now()
	if got := fillRate(101, t0, t0.Add(2*time.Second)); got != 50 {
		t.Errorf("fill rate %v, want 50", got)
	}
}

func TestSumMatchingAndParse(t *testing.T) {
	m, err := support.ParseMetrics(strings.NewReader(`# TYPE apiserver_request_total counter
apiserver_request_total{verb="LIST",code="200"} 3
apiserver_request_total{verb="WATCH",code="200"} 7
apiserver_request_total{verb="PATCH",code="200"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sumMatching(m, "apiserver_request_total{", `!verb="WATCH"`); got != 5 {
		t.Errorf("non-WATCH sum %v, want 5", got)
	}
	if got := sumMatching(m, "apiserver_request_total{", `verb="WATCH"`); got != 7 {
		t.Errorf("WATCH sum %v, want 7", got)
	}
}

func TestRecordMedianAndSpread(t *testing.T) {
	b := &bench{}
	b.record("s", "m", "u", []float64{3, 1, 2, 10}, "")
	r := b.results[0]
	if r.Median != 2.5 || r.Min != 1 || r.Max != 10 {
		t.Errorf("%+v", r)
	}
}

func TestLogTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "syncer.log")
	if err := os.WriteFile(path, []byte("I1124 12:13:25.606847   21712 engine.go:347] \"Syncer started\"\nI1124 12:13:27.218186   21712 engine.go:435] \"Selection changed\" syncTarget=\"bench\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, ok := logTime(path, `"Selection changed"`)
	want := time.Date(time.Now().Year(), time.November, 24, 12, 13, 27, 218186000, time.Local)
	if !ok || !got.Equal(want) {
		t.Errorf("logTime = %v %v, want %v", got, ok, want)
	}
	if _, ok := logTime(path, "absent"); ok {
		t.Error("found a line that is not there")
	}
}

func TestRewriteMailboxRequests(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"/api/v1/namespaces?limit=500", "/api/v1/namespaces?fieldSelector=metadata.name%3Dmailbox-0001&limit=500"},
		{"/api/v1/namespaces/mailbox-0001", "/api/v1/namespaces/mailbox-0001"},
		{"/api/v1/configmaps?labelSelector=x", "/api/v1/configmaps?labelSelector=x"},
	} {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		rewriteDownstream(u, "mailbox-0001")
		if got := u.String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestProcUsageAndLabelValue(t *testing.T) {
	cpu, rss, err := procUsage(os.Getpid())
	if err != nil {
		support.Skip(t, "no /proc: "+err.Error())
	}
	if cpu < 0 || rss < 1<<20 {
		t.Errorf("cpu %v s, rss %v bytes", cpu, rss)
	}
	if got := labelValue(`apiserver_longrunning_requests{group="",resource="configmaps",verb="WATCH"}`, "resource"); got != "configmaps" {
		t.Errorf("labelValue: %q", got)
	}
}

func TestContainerMemory(t *testing.T) {
	summary := []byte(`{"node": {"nodeName": "edge-node"}, "pods": [
 {"podRef": {"name": "other", "namespace": "ns", "uid": "u-1"},
  "containers": [{"name": "kubestellar-syncer", "memory": {"time": "2026-11-27T10:00:00Z", "workingSetBytes": 1, "rssBytes": 1}}]},
 {"podRef": {"name": "syncer-abc", "namespace": "ns", "uid": "u-2"},
  "containers": [{"name": "sidecar", "memory": {"time": "2026-11-27T10:00:05Z", "workingSetBytes": 7, "rssBytes": 7}},
   {"name": "kubestellar-syncer", "memory": {"time": "2026-11-27T10:00:05Z", "workingSetBytes": 73400320, "rssBytes": 62914560, "usageBytes": 80000000}}]},
 {"podRef": {"name": "fresh", "namespace": "ns", "uid": "u-3"}, "containers": [{"name": "kubestellar-syncer"}]}]}`)
	ws, rss, at, ok, err := containerMemory(summary, "u-2", "kubestellar-syncer")
	if err != nil || !ok || ws != 73400320 || rss != 62914560 || !at.Equal(time.Date(2026, 11, 27, 10, 0, 5, 0, time.UTC)) {
		t.Errorf("containerMemory = %v %v %v %v %v", ws, rss, at, ok, err)
	}
	if _, _, _, ok, err := containerMemory(summary, "u-3", "kubestellar-syncer"); ok || err != nil {
		t.Errorf("a container without a memory sample: ok %v, err %v", ok, err)
	}
	if _, _, _, ok, _ := containerMemory(summary, "u-9", "kubestellar-syncer"); ok {
		t.Error("found a pod that is not in the summary")
	}
	if _, _, _, _, err := containerMemory([]byte("<html>"), "u-2", "kubestellar-syncer"); err == nil {
		t.Error("no error on a response that is not JSON")
	}
}

func TestMemorySizes(t *testing.T) {
	for _, tc := range []struct {
		cfg  config
		want string
	}{
		{config{}, "[1000 10000 100000]"},
		{config{quick: true}, "[100 1000]"},
		{config{quick: true, sizes: []int{1000}}, "[1000]"},
	} {
		if got := fmt.Sprint((&bench{cfg: tc.cfg}).memorySizes()); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.cfg, got, tc.want)
		}
	}
}
