package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/credential"
)

// TestUpstreamTokenRenewal: a syncer Pod bootstrapped with a 10-minute upstream token (the shortest
// a TokenRequest grants) renews it when half its life has gone, keeps the new token in the Secret
// <id>-upstream-token at the edge, and goes on syncing both ways, without a restart, after the
// first token has expired (the upstream refuses it by then). Condition UpstreamCredential and the
// metrics say so.
//
// It spans the suite: the syncer starts, with nothing to sync yet, while the tests that run one at a
// time run; then the test gives it a config and waits, as a parallel one, for the rest of the first token's life (and the minute's leeway the
// apiserver allows), holding a slot only for what is left of it.
func TestUpstreamTokenRenewal(t *testing.T) {
	f := newFixture(t)
	// No config yet: the syncers of the tests that run one at a time read every config upstream.
	id, _, d := bootstrapPod(t, f, f.name, bootstrap.RBACBroad, "--lifetime=10m")
	first := bootstrapToken(t, f, id)
	if first.Lifetime() > 15*time.Minute {
		t.Fatalf("the bootstrap token lives %v, want the 10m asked for", first.Lifetime())
	}
	t.Logf("bootstrap token of %s issued %s, expires %s", first.ServiceAccount, first.Issued.Format(time.TimeOnly), first.Expires.Format(time.TimeOnly))

	t.Parallel()
	f.up = mustClients(upstream) // a test that ran meanwhile may have restarted kcp: a new admin token
	ns := f.namespace("app")
	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"))
	spec["upsync"] = []interface{}{map[string]interface{}{"apiGroup": "", "resources": []interface{}{"configmaps"},
		"namespaces": []interface{}{ns}, "names": []interface{}{"edge-report"}}}
	f.syncerConfig(f.name, spec)
	if wait := time.Until(first.Expires.Add(20 * time.Second)); wait > 0 {
		t.Logf("waiting %v more for the bootstrap token to expire", wait.Round(time.Second))
		select {
		case <-time.After(wait):
		case <-f.ctx.Done():
			t.Fatal("stopped")
		}
	}

	// The first token is dead upstream: the apiserver allows a minute's leeway past its expiry, and
	// caches what it authenticated for a few seconds.
	old := kubernetes.NewForConfigOrDie(upstream.TokenConfig(first.Value))
	eventually(t, 2*time.Minute, "the upstream refuses the bootstrap token", func() (bool, string) {
		_, err := old.AuthenticationV1().SelfSubjectReviews().Create(f.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return apierrors.IsUnauthorized(err), fmt.Sprintf("%v", err)
	})
	// The renewed one is stored at the edge, the same ServiceAccount's, alive.
	secret, err := f.down.kube.CoreV1().Secrets(id).Get(f.ctx, id+bootstrap.UpstreamTokenSuffix, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := credential.ParseToken(string(secret.Data[credential.TokenKey]))
	if err != nil || renewed.ServiceAccount != first.ServiceAccount || !renewed.Expires.After(time.Now()) {
		t.Fatalf("the stored token: %+v, %v; want a live token of %s", renewed, err, first.ServiceAccount)
	}
	// The syncer goes on, both ways, in the same container.
	f.create(f.up, gvrConfigMaps, configMap(ns, "after-expiry", map[string]interface{}{"k": "v"}))
	f.waitFor(f.down, gvrConfigMaps, ns, "after-expiry", hasMark)
	f.create(f.down, gvrConfigMaps, configMap(ns, "edge-report", map[string]interface{}{"result": "pass"}))
	f.waitFor(f.up, gvrConfigMaps, ns, "edge-report", upsynced)
	pod := d.pod()
	if n := d.restarts(pod.Name); n != 0 {
		t.Errorf("the syncer container restarted %d times", n)
	}
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, reason, message := conditionOf(o, "UpstreamCredential")
		return status == "True" && reason == "Renewed" && strings.Contains(message, renewed.Expires.UTC().Format(time.RFC3339)),
			fmt.Sprintf("UpstreamCredential %s %s: %s", status, reason, message)
	})
	m, err := d.scrape(pod)
	if err != nil {
		t.Fatal(err)
	}
	if m[`kubestellar_syncer_upstream_token_renewals_total{result="success"}`] < 1 ||
		m["kubestellar_syncer_upstream_token_expiry_timestamp_seconds{}"] < float64(time.Now().Unix()) {
		t.Errorf("metrics: renewals %v, expiry %v", m[`kubestellar_syncer_upstream_token_renewals_total{result="success"}`],
			m["kubestellar_syncer_upstream_token_expiry_timestamp_seconds{}"])
	}
	if logs := d.logs(pod.Name, false); !strings.Contains(logs, "Renewed the upstream token") {
		t.Errorf("no renewal in the syncer's log:\n%s", d.tail(pod.Name, 30))
	}
}

// bootstrapToken is the token of the kubeconfig syncer-gen's manifest gives the syncer.
func bootstrapToken(t *testing.T, f *fixture, id string) credential.Token {
	t.Helper()
	secret, err := f.down.kube.CoreV1().Secrets(id).Get(f.ctx, id+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(secret.Data[bootstrap.KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	tok, err := credential.ParseToken(cfg.AuthInfos["syncer"].Token)
	if err != nil {
		t.Fatalf("the bootstrap token: %v", err)
	}
	return tok
}
