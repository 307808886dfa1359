package metrics

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Directions of kubestellar_syncer_bytes_total.
const (
	Sent     = "sent"
	Received = "received"
)

// newBytes is kubestellar_syncer_bytes_total.
func newBytes() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "bytes_total",
		Help: "HTTP body bytes the syncer sent to and received from an apiserver, as they travel (gzip-compressed when the server compresses), by side, direction (sent, received), verb and resource (resource.group; empty for discovery). TLS, HTTP/2 framing and headers are not counted."},
		[]string{"side", "direction", "verb", "resource"})
}

// Resource is the resource a request's path names, as resource.group ("configmaps",
// "deployments.apps"); "" for discovery and paths that name none. Paths may carry a kcp
// /clusters/<name> prefix.
func Resource(path string) string {
	group, segs, ok := apiPath(path)
	if !ok || len(segs) == 0 {
		return ""
	}
	if segs[0] == "watch" {
		segs = segs[1:]
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:] // namespaces/<ns>/<resource>...; namespaces/<ns> alone names the Namespace
	}
	if len(segs) == 0 {
		return ""
	}
	if group == "" {
		return segs[0]
	}
	return segs[0] + "." + group
}

// apiPath splits a request path of a group version (/api/v1/..., /apis/<group>/<version>/..., each
// perhaps under kcp's /clusters/<name>) into the group and what follows the version; ok is false
// for any other path (discovery of the groups, /version, /openapi...).
func apiPath(path string) (group string, rest []string, ok bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) >= 2 && segs[0] == "clusters" {
		segs = segs[2:]
	}
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		return "", segs[2:], true // api, v1
	case len(segs) >= 3 && segs[0] == "apis":
		return segs[1], segs[3:], true // apis, group, version
	}
	return "", nil, false
}

// countBytes counts what req (of verb) sends and what its response brings on Bytes. It asks for
// gzip itself, unless the caller did, so that the body is counted as it travels, and decompresses it
// for the caller.
func (r roundTripper) countBytes(req *http.Request, verb string) (*http.Request, func(*http.Response)) {
	resource := Resource(req.URL.Path)
	if req.ContentLength > 0 {
		r.m.Bytes.WithLabelValues(r.side, Sent, verb, resource).Add(float64(req.ContentLength))
	}
	asked := false
	if req.Header.Get("Accept-Encoding") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Accept-Encoding", "gzip")
		asked = true
	}
	return req, func(resp *http.Response) {
		counted := &countingBody{ReadCloser: resp.Body, received: r.m.Bytes.WithLabelValues(r.side, Received, verb, resource)}
		resp.Body = counted
		if asked && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
			resp.Body = &gunzipBody{compressed: counted}
			resp.Header.Del("Content-Encoding")
			resp.Header.Del("Content-Length")
			resp.ContentLength, resp.Uncompressed = -1, true
		}
	}
}

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	received prometheus.Counter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.received.Add(float64(n))
	}
	return n, err
}

// gunzipBody decompresses a gzip body on its first read (so that a watch does not block its caller
// before the first event), as net/http does for a request it asked gzip for.
type gunzipBody struct {
	compressed io.ReadCloser
	once       sync.Once
	r          *gzip.Reader
	err        error
}

func (b *gunzipBody) Read(p []byte) (int, error) {
	b.once.Do(func() { b.r, b.err = gzip.NewReader(b.compressed) })
	if b.err != nil {
		return 0, b.err
	}
	return b.r.Read(p)
}

func (b *gunzipBody) Close() error { return b.compressed.Close() }
