package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthProbes(t *testing.T) {
	for _, tc := range []struct {
		name            string
		ready           error
		standby         bool
		wantReadyz      int
		wantReadyzWords string
	}{
		{"ready", nil, false, 200, "ok"},
		{"not synced", errors.New("2 of 5 upstream informers not synced yet"), false, 503, "not synced"},
		{"disconnected", errors.New("upstream unreachable since ..."), false, 503, "unreachable"},
		{"standby", errors.New("not started"), true, 200, "standby"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := health{ready: func() error { return tc.ready }, standby: func() bool { return tc.standby }}
			srv := httptest.NewServer(h.mux())
			defer srv.Close()
			for path, want := range map[string]int{"/healthz": 200, "/readyz": tc.wantReadyz} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				var body strings.Builder
				buf := make([]byte, 512)
				n, _ := resp.Body.Read(buf)
				body.Write(buf[:n])
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s = %d %q, want %d", path, resp.StatusCode, body.String(), want)
				}
				if path == "/readyz" && !strings.Contains(body.String(), tc.wantReadyzWords) {
					t.Errorf("/readyz says %q, want it to say %q", body.String(), tc.wantReadyzWords)
				}
			}
		})
	}
}
