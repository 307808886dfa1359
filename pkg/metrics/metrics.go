package metrics

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

const namespace = "kubestellar_syncer"

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
)

// Metrics are the syncer's metrics, registered on one registry.
type Metrics struct {
	// APIRequests counts requests sent to an apiserver by side, verb (GET, LIST, WATCH, CREATE,
	// UPDATE, PATCH, DELETE, DISCOVERY) and HTTP code ("error" when no response came back).
	APIRequests *prometheus.CounterVec
	// Writes counts writes the syncer made or attempted, by direction, resource and result.
	Writes *prometheus.CounterVec
	// InformersRunning counts running informers per side.
	InformersRunning *prometheus.GaugeVec
	// InformersSynced counts synced informers per side.
	InformersSynced *prometheus.GaugeVec

	queue queueMetrics
}

type queueMetrics struct {
	depth, longest, unfinished *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		APIRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "api_requests_total",
			Help: "API requests sent by the syncer, by side, verb and HTTP status code."}, []string{"side", "verb", "code"}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "writes_total",
			Help: "Writes made or attempted by the syncer, by direction, resource and result."}, []string{"direction", "resource", "result"}),
		InformersRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "informers_running",
			Help: "Informers running, by side."}, []string{"side"}),
		InformersSynced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "informers_synced",
			Help: "Informers whose cache has synced, by side."}, []string{"side"}),
	}
	q := &m.queue
	q.depth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of the workqueue."}, []string{"name"})
	q.adds = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "workqueue", Name: "adds_total",
		Help: "Adds handled by the workqueue."}, []string{"name"})
	q.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help: "How long an item stays in the workqueue before being processed.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"name"})
	q.workDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "workqueue", Name: "work_duration_seconds",
		Help: "How long processing an item takes.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"name"})
	q.unfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration."}, []string{"name"})
	q.longest = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "Seconds the longest running processor has been running."}, []string{"name"})
	q.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "workqueue", Name: "retries_total",
		Help: "Retries handled by the workqueue."}, []string{"name"})
	reg.MustRegister(m.APIRequests, m.Writes, m.InformersRunning, m.InformersSynced,
		q.depth, q.adds, q.latency, q.workDuration, q.unfinished, q.longest, q.retries)
	return m
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

// InstrumentTransport counts every request sent through rt on APIRequests with the given side.
func (m *Metrics) InstrumentTransport(side string, rt http.RoundTripper) http.RoundTripper {
	return roundTripper{side: side, next: rt, counter: m.APIRequests}
}

type roundTripper struct {
	side    string
	next    http.RoundTripper
	counter *prometheus.CounterVec
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	r.counter.WithLabelValues(r.side, Verb(req.Method, req.URL.Path, req.URL.Query().Get("watch")), code).Inc()
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
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) >= 2 && segs[0] == "clusters" {
		segs = segs[2:]
	}
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:] // api, v1
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:] // apis, group, version
	default:
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
