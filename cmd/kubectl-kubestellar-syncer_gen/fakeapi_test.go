package main

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// fakeAPI is a mailbox apiserver answering what a syncer-gen run asks (the version, access reviews,
// discovery and a list of SyncerConfigs, server-side applies, a TokenRequest), granting everything
// and recording each request's method, path and credentials.
type fakeAPI struct {
	URL string
	// CA is the PEM certificate that verifies the server, and CAFile a file holding it.
	CA     []byte
	CAFile string
	// syncerConfigs are the names of the SyncerConfigs listed.
	syncerConfigs []string

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	method, path, authorization, impersonate string
}

const (
	fakeUID   = "sa-uid-1234"
	fakeToken = "issued-token"
)

func newFakeAPI(t *testing.T, syncerConfigs ...string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{syncerConfigs: syncerConfigs}
	// TLS: client-go sends credentials over TLS only.
	srv := httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	f.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	f.CAFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f.CAFile, f.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Impersonate-User")})
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	reply := func(code int, obj interface{}) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(obj)
	}
	var obj map[string]interface{}
	_ = json.Unmarshal(body, &obj)
	switch p := r.URL.Path; {
	case p == "/version":
		reply(200, map[string]string{"major": "1", "minor": "35", "gitVersion": "v1.35.4"})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/selfsubjectaccessreviews"):
		review := &authorizationv1.SelfSubjectAccessReview{}
		if !decode(w, body, review) {
			return
		}
		review.Status.Allowed = true
		reply(201, review)
	case p == "/apis/edge.kubestellar.io/v2alpha1":
		reply(200, map[string]interface{}{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "edge.kubestellar.io/v2alpha1",
			"resources": []interface{}{map[string]interface{}{"name": "syncerconfigs", "singularName": "syncerconfig", "namespaced": false,
				"kind": "SyncerConfig", "verbs": []string{"get", "list", "watch"}}}})
	case p == "/apis/edge.kubestellar.io/v2alpha1/syncerconfigs":
		var items []interface{}
		for _, name := range f.syncerConfigs {
			items = append(items, map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
				"metadata": map[string]interface{}{"name": name}})
		}
		reply(200, map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfigList", "metadata": map[string]interface{}{}, "items": items})
	case r.Method == http.MethodPatch: // a server-side apply: the object as applied, with a UID
		meta, _ := obj["metadata"].(map[string]interface{})
		if meta != nil {
			meta["uid"] = fakeUID
		}
		reply(200, obj)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/token"):
		tr := &authenticationv1.TokenRequest{}
		if !decode(w, body, tr) {
			return
		}
		tr.Status = authenticationv1.TokenRequestStatus{Token: fakeToken, ExpirationTimestamp: metav1.NewTime(time.Now().Add(365 * 24 * time.Hour))}
		reply(201, tr)
	default:
		reply(404, map[string]interface{}{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
	}
}

// decode decodes a request body (client-go sends built-in types as protobuf) into obj, or answers
// 400.
func decode(w http.ResponseWriter, body []byte, obj runtime.Object) bool {
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, obj); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// seen are the requests so far.
func (f *fakeAPI) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// kubeconfig writes a kubeconfig with contexts "mailbox" (current, at the fake with token
// "kubeconfig-token") and "other" (at an unusable address), and returns its path.
func (f *fakeAPI) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- {name: mailbox, cluster: {server: "` + f.URL + `", certificate-authority-data: "` + base64.StdEncoding.EncodeToString(f.CA) + `"}}
- {name: elsewhere, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: admin, user: {token: kubeconfig-token}}
- {name: nobody, user: {token: nobody-token}}
contexts:
- {name: mailbox, context: {cluster: mailbox, user: admin}}
- {name: other, context: {cluster: elsewhere, user: nobody}}
current-context: mailbox
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
