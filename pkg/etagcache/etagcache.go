package etagcache

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
)

// maxBody bounds what one kept response may hold.
const maxBody = 8 << 20

// entry is a kept response.
type entry struct {
	etag   string
	status int
	header http.Header
	body   []byte
}

// Transport keeps discovery responses by URL and Accept header, and revalidates them.
type Transport struct {
	next http.RoundTripper

	mu   sync.Mutex
	kept map[string]entry
}

// New wraps next.
func New(next http.RoundTripper) *Transport {
	return &Transport{next: next, kept: map[string]entry{}}
}

// Discovery tells whether a path is one of the aggregated discovery documents.
func Discovery(path string) bool {
	p := strings.Trim(path, "/")
	if strings.HasPrefix(p, "clusters/") {
		if parts := strings.SplitN(p, "/", 3); len(parts) == 3 {
			p = parts[2]
		} else {
			p = ""
		}
	}
	return p == "api" || p == "apis"
}

// RoundTrip revalidates a kept discovery response, or keeps a new one.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !Discovery(req.URL.Path) || req.Header.Get("If-None-Match") != "" {
		return t.next.RoundTrip(req)
	}
	key := req.URL.String() + "\x00" + req.Header.Get("Accept")
	t.mu.Lock()
	e, ok := t.kept[key]
	t.mu.Unlock()
	if ok {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", e.etag)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if ok && resp.StatusCode == http.StatusNotModified {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return e.response(req), nil
	}
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) <= maxBody {
		t.mu.Lock()
		t.kept[key] = entry{etag: etag, status: resp.StatusCode, header: resp.Header.Clone(), body: body}
		t.mu.Unlock()
	}
	return resp, nil
}

// response is the kept response, as the answer to req.
func (e entry) response(req *http.Request) *http.Response {
	return &http.Response{Status: http.StatusText(e.status), StatusCode: e.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: e.header.Clone(), Body: io.NopCloser(bytes.NewReader(e.body)), ContentLength: int64(len(e.body)), Request: req}
}
