package metrics

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubestellar/syncer/pkg/version"
)

const namespace = "kubestellar_syncer"

// Sides: the apiservers the syncer talks to, the values of the side label.
const (
	Upstream   = "upstream"
	Downstream = "downstream"
)

// Sides are both sides, upstream first.
var Sides = []string{Upstream, Downstream}

// Directions of work.
const (
	Downsync = "downsync"
	Status   = "status"
	Upsync   = "upsync"
)

// Results of a write.
const (
	Created  = "created"
	Updated  = "updated"
	Deleted  = "deleted"
	Conflict = "conflict"
	Error    = "error"
	// Loop counts the writes that found a loop with another actor (then the key backs off).
	Loop = "loop"
	// HandedOver counts the managedFields patches that hand fields of earlier writes (the syncer's
	// own plain create, the release-0.14 syncer's updates) to the syncer's apply manager.
	HandedOver = "handed-over"
)

// successCodes are the verbs Verb names, each with the HTTP code its success usually has: the
// api_requests_total series that exist at 0 from the start, so that rate() over them is 0, not
// empty, before the first request.
var successCodes = map[string]string{
	"GET": "200", "LIST": "200", "WATCH": "200", "CREATE": "201", "UPDATE": "200", "PATCH": "200", "DELETE": "200", "DISCOVERY": "200",
}

// Metrics are the syncer's metrics, registered on one registry. The syncer's own are named
// kubestellar_syncer_*; client-go's workqueue and REST client metrics have the names Kubernetes
// components give them (workqueue_*, rest_client_*), so that the dashboards made for those work.
type Metrics struct {
	// APIRequests counts requests sent to an apiserver by side, verb (GET, LIST, WATCH, CREATE,
	// UPDATE, PATCH, DELETE, DISCOVERY) and HTTP code ("error" when no response came back).
	APIRequests *prometheus.CounterVec
	// Bytes counts the HTTP body bytes sent and received, as they travel, by side, direction, verb and
	// resource (bytes.go).
	Bytes *prometheus.CounterVec
	// Writes counts writes the syncer made or attempted, by direction, resource and result.
	Writes *prometheus.CounterVec
	// GateVerdicts counts the keys a per-object policy stopped, by direction, gate (its name in the
	// controller's ordered list) and verdict: hold (until an event brings the key back), wait (looked
	// at again after a while) or error (retried with backoff). Keys a gate lets through are not counted.
	GateVerdicts *prometheus.CounterVec
	// Orphans counts the objects the audit found that the syncer should have deleted and had not
	// (an edge copy whose upstream object is gone; an upstream copy whose edge object is gone), by
	// direction and resource: each is processed again. It stays at 0 unless a deletion was missed.
	Orphans *prometheus.CounterVec
	// EdgeWarnings counts the warnings seen at the edge about the objects the syncer wrote (Warning
	// Events, containers waiting or OOM-killed), by result: told (an Event on the upstream object) or
	// repeated (told shortly before, so not told again).
	EdgeWarnings *prometheus.CounterVec
	// DeletionsHeld is how many deletions at the edge the deletion breaker holds (0 when it does not).
	DeletionsHeld prometheus.Gauge
	// FenceInForce is 1 while the syncer's last proof found the edge owner's fence in force, 0 while
	// not (it writes nothing at the edge then); absent for a syncer without an executor.
	FenceInForce *prometheus.GaugeVec
	// EdgeStoredBytes is what the syncer's copies at the edge hold, in bytes, as written.
	EdgeStoredBytes prometheus.Gauge
	// DriftHeld is how many objects have their edge drift held (drift policy Report).
	DriftHeld prometheus.Gauge
	// ResourcesOverLimit is how many upstream resources are held for having too many objects.
	ResourcesOverLimit prometheus.Gauge
	// Workspaces counts the workspaces one syncer serves (--apiexport-endpoint-slice), by state
	// (WorkspaceSyncing, WorkspaceDraining); no series for a single workspace.
	Workspaces *prometheus.GaugeVec
	// InformersRunning counts running informers per side.
	InformersRunning *prometheus.GaugeVec
	// InformersSynced counts synced informers per side.
	InformersSynced *prometheus.GaugeVec
	// SyncLatency is the time from observing a change (the first event that enqueued an object) to
	// the write that applied it, by direction and resource.
	SyncLatency *prometheus.HistogramVec
	// Leader is 1 while this process is the leader (or runs without leader election).
	Leader prometheus.Gauge
	// LastHeartbeat is the Unix time of the last heartbeat written upstream; absent until the first
	// (a standby writes none).
	LastHeartbeat *Timestamp
	// ClientRequests, ClientRequestLatency and ClientRateLimiterLatency come from client-go's
	// metrics hooks, named and labelled as Kubernetes components name them: requests by HTTP code,
	// method and host (rest_client_requests_total), time spent on requests
	// (rest_client_request_duration_seconds), and time requests waited for the client-side rate
	// limiter (rest_client_rate_limiter_duration_seconds), by verb and host.
	ClientRequests           *prometheus.CounterVec
	ClientRequestLatency     *prometheus.HistogramVec
	ClientRateLimiterLatency *prometheus.HistogramVec

	queue   queueMetrics
	objects *objectsCollector
}

type queueMetrics struct {
	depth, longest, unfinished *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

// restClientBuckets are Kubernetes' buckets for the rest_client_*_duration_seconds histograms, and
// workqueueBuckets its buckets for the workqueue_*_duration_seconds ones: the same buckets as every
// Kubernetes component, so that quantiles compare.
var (
	restClientBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}
	workqueueBuckets  = prometheus.ExponentialBuckets(10e-9, 10, 10)
)

// The results of EdgeWarnings.
const (
	WarningTold     = "told"
	WarningRepeated = "repeated"
)

// The states of Workspaces.
const (
	WorkspaceSyncing  = "syncing"
	WorkspaceDraining = "draining"
)

// New creates the metrics and registers them on reg. The series of closed label sets that do not
// depend on the configuration exist from the start: reachable (1) and informers_running and
// informers_synced (0) for both sides, api_requests_total (0) for each side and verb with its usual
// success code, and leader (0), so that rate() and absent() work on them before anything happens.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		APIRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "api_requests_total",
			Help: "API requests sent by the syncer, by side, verb and HTTP status code."}, []string{"side", "verb", "code"}),
		Bytes: newBytes(),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "writes_total",
			Help: "Writes made or attempted by the syncer, by direction, resource and result."}, []string{"direction", "resource", "result"}),
		GateVerdicts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "gate_verdicts_total",
			Help: "Keys a per-object policy (gate) stopped, by direction, gate and verdict: hold (until an event brings the key back), wait (looked at again after a while), error (retried)."},
			[]string{"direction", "gate", "verdict"}),
		Orphans: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "orphans_found_total",
			Help: "Objects the audit found that the syncer should have deleted and had not, by direction and resource (each is processed again); 0 unless a deletion was missed."},
			[]string{"direction", "resource"}),
		EdgeWarnings: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "edge_warnings_total",
			Help: "Warnings seen at the edge about the objects the syncer wrote, by result (told: an Event on the upstream object; repeated: told shortly before)."},
			[]string{"result"}),
		DeletionsHeld: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "deletions_held",
			Help: "Deletions at the edge the deletion breaker holds (0 when it does not): too many fell due within a minute; see condition DeletionsHeld."}),
		FenceInForce: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "fence_in_force",
			Help: "1 while the edge owner's fence (the executor's admission policy) was last proven in force, 0 while not: the syncer then writes nothing at the edge; see condition EdgeFence. Absent without an executor."}, nil),
		EdgeStoredBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "edge_stored_bytes",
			Help: "What the syncer's copies at the edge hold, in bytes (JSON, as written; copies kept at the edge included): bounded by --max-edge-bytes."}),
		ResourcesOverLimit: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "resources_over_object_limit",
			Help: "Upstream resources held, not synced, for having more objects in the selected namespaces than --max-objects-per-resource; see condition SelectionValid."}),
		DriftHeld: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "drift_held_objects",
			Help: "Objects whose edge copy differs from upstream and is left so (drift policy Report), their upstream changes held until acknowledged."}),
		Workspaces: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "workspaces",
			Help: "Workspaces served through an APIExport's virtual workspace, by state (syncing: bound; draining: no longer bound, its edge objects being deleted)."},
			[]string{"state"}),
		InformersRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "informers_running",
			Help: "Informers running, by side."}, []string{"side"}),
		InformersSynced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "informers_synced",
			Help: "Informers whose cache has synced, by side."}, []string{"side"}),
		SyncLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "sync_latency_seconds",
			Help:    "Time from observing a change to the write that applied it, by direction and resource.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"direction", "resource"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "leader",
			Help: "1 while this process leads (always 1 without --leader-elect)."}),
		LastHeartbeat: newTimestamp(prometheus.GaugeOpts{Namespace: namespace, Name: "last_heartbeat_timestamp_seconds",
			Help: "Unix time of the last heartbeat written to the SyncerConfigs upstream; absent until the first (a standby writes none)."}),
		ClientRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
			Help: "Number of HTTP requests, partitioned by status code, method, and host."}, []string{"code", "method", "host"}),
		ClientRequestLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
			Help: "Request latency in seconds. Broken down by verb, and host.", Buckets: restClientBuckets}, []string{"verb", "host"}),
		ClientRateLimiterLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_rate_limiter_duration_seconds",
			Help: "Client side rate limiter latency in seconds. Broken down by verb, and host.", Buckets: restClientBuckets}, []string{"verb", "host"}),
		objects: &objectsCollector{desc: prometheus.NewDesc(namespace+"_objects_managed",
			"Objects the syncer manages, by direction (downsync: owned edge objects; upsync: upstream copies) and resource.", []string{"direction", "resource"}, nil)},
	}
	// client-go's workqueue metrics, with the names, help and buckets Kubernetes components give them
	// (k8s.io/component-base/metrics/prometheus/workqueue), on this registry.
	q := &m.queue
	q.depth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of workqueue"}, []string{"name"})
	q.adds = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
		Help: "Total number of adds handled by workqueue"}, []string{"name"})
	q.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: workqueueBuckets}, []string{"name"})
	q.workDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
		Help: "How long in seconds processing an item from workqueue takes.", Buckets: workqueueBuckets}, []string{"name"})
	q.unfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. " +
			"One can deduce the number of stuck threads by observing the rate at which this increases."}, []string{"name"})
	q.longest = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "How many seconds has the longest running processor for workqueue been running."}, []string{"name"})
	q.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
		Help: "Total number of retries handled by workqueue"}, []string{"name"})

	for _, side := range Sides {
		m.InformersRunning.WithLabelValues(side).Set(0)
		m.InformersSynced.WithLabelValues(side).Set(0)
		for verb, code := range successCodes {
			m.APIRequests.WithLabelValues(side, verb, code)
		}
	}
	reg.MustRegister(m.APIRequests, m.Bytes, m.Writes, m.GateVerdicts, m.Orphans, m.EdgeWarnings, m.DeletionsHeld, m.FenceInForce, m.EdgeStoredBytes, m.DriftHeld, m.ResourcesOverLimit, m.Workspaces, m.InformersRunning, m.InformersSynced, m.SyncLatency, m.Leader,
		m.LastHeartbeat, m.ClientRequests, m.ClientRequestLatency, m.ClientRateLimiterLatency, m.objects,
		q.depth, q.adds, q.latency, q.workDuration, q.unfinished, q.longest, q.retries,
		buildInfo(version.Get()))
	return m
}

// Timestamp is a gauge that holds a Unix time and is absent until it is first set: a time never
// taken is not exported as 0 (1970), which would look like a stopped clock.
type Timestamp struct{ vec *prometheus.GaugeVec }

func newTimestamp(opts prometheus.GaugeOpts) *Timestamp {
	return &Timestamp{vec: prometheus.NewGaugeVec(opts, nil)}
}

// SetToCurrentTime sets the timestamp to now; from then on it is exported.
func (t *Timestamp) SetToCurrentTime() { t.vec.WithLabelValues().SetToCurrentTime() }

// Describe implements prometheus.Collector.
func (t *Timestamp) Describe(ch chan<- *prometheus.Desc) { t.vec.Describe(ch) }

// Collect implements prometheus.Collector: nothing until the timestamp is first set.
func (t *Timestamp) Collect(ch chan<- prometheus.Metric) { t.vec.Collect(ch) }

// buildInfo is the gauge kubestellar_syncer_build_info, always 1, whose labels say what was built:
// the version and git revision (as --version prints them) and the Go version. Its labels are
// constant for the life of the process, so it is one series.
func buildInfo(info version.Info) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info",
		Help:        "Always 1; the labels are the syncer's version, git revision and Go version.",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion}})
	g.Set(1)
	return g
}

// WorkqueueProvider returns a client-go MetricsProvider that records on these metrics.
func (m *Metrics) WorkqueueProvider() workqueue.MetricsProvider { return provider{&m.queue} }

type provider struct{ q *queueMetrics }

func (p provider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.q.depth.WithLabelValues(name)
}
func (p provider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.q.adds.WithLabelValues(name)
}
func (p provider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.q.latency.WithLabelValues(name)
}
func (p provider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.q.workDuration.WithLabelValues(name)
}
func (p provider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.q.unfinished.WithLabelValues(name)
}
func (p provider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.q.longest.WithLabelValues(name)
}
func (p provider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.q.retries.WithLabelValues(name)
}

// ObjectCounter reports, at scrape time, how many objects the syncer manages per direction and
// resource by calling add for each.
type ObjectCounter func(add func(direction, resource string, n int))

// SetObjectCounter sets what objects_managed reports.
func (m *Metrics) SetObjectCounter(fn ObjectCounter) {
	m.objects.mu.Lock()
	m.objects.fn = fn
	m.objects.mu.Unlock()
}

type objectsCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	fn   ObjectCounter
}

func (c *objectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *objectsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	fn := c.fn
	c.mu.Unlock()
	if fn == nil {
		return
	}
	fn(func(direction, resource string, n int) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), direction, resource)
	})
}

// InstrumentTransport counts every request sent through rt on APIRequests, and its body bytes on
// Bytes, with the given side. It goes right above the connection's transport (rest.Config.Wrap).
func (m *Metrics) InstrumentTransport(side string, rt http.RoundTripper) http.RoundTripper {
	return roundTripper{side: side, next: rt, m: m}
}

type roundTripper struct {
	side string
	next http.RoundTripper
	m    *Metrics
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	verb := Verb(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	req, received := r.countBytes(req, verb)
	resp, err := r.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
		received(resp)
	}
	r.m.APIRequests.WithLabelValues(r.side, verb, code).Inc()
	return resp, err
}

// Verb classifies a request the way the apiserver does: a GET of a collection is a LIST, a GET with
// watch=true a WATCH, a GET of /api or /apis discovery. Paths may carry a kcp /clusters/<name> prefix.
func Verb(method, path, watch string) string {
	switch method {
	case http.MethodPost:
		return "CREATE"
	case http.MethodPut:
		return "UPDATE"
	case http.MethodPatch:
		return "PATCH"
	case http.MethodDelete:
		return "DELETE"
	case http.MethodGet:
	default:
		return "OTHER"
	}
	if watch == "true" || watch == "1" {
		return "WATCH"
	}
	_, segs, ok := apiPath(path)
	if !ok {
		return "DISCOVERY" // /api, /apis, /apis/group, /version, /openapi...
	}
	if len(segs) > 0 && segs[0] == "watch" {
		return "WATCH"
	}
	switch {
	case len(segs) == 0:
		return "DISCOVERY"
	case segs[0] == "namespaces" && len(segs) >= 3:
		segs = segs[2:] // namespaces/<ns>/<resource>[/<name>...]
	}
	if len(segs) == 1 {
		return "LIST"
	}
	return "GET"
}

// ClientGoHooks returns adapters for client-go's process-wide metrics hooks
// (k8s.io/client-go/tools/metrics.Register), recording on this registry as Kubernetes components
// record them (k8s.io/component-base/metrics/prometheus/restclient). Register them once, in main.
func (m *Metrics) ClientGoHooks() clientmetrics.RegisterOpts {
	return clientmetrics.RegisterOpts{
		RequestLatency:     latencyAdapter{m.ClientRequestLatency},
		RateLimiterLatency: latencyAdapter{m.ClientRateLimiterLatency},
		RequestResult:      resultAdapter{m.ClientRequests},
	}
}

type latencyAdapter struct{ h *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ c *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}
