package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSignedDesiredState: a syncer whose edge requires signatures (--signature-policy=Enforce, the
// public key in --signature-keys) applies what a user signed with the real `kubectl kubestellar
// sign` and applied with the real kubectl (so the stored object carries kubectl's last-applied
// annotation and the apiserver's, or kcp's, additions); an unsigned ConfigMap in the same namespace
// is never written at the edge, and upstream says why (Warning Event SignatureInvalid, condition
// ObjectsSynced). A signed ConfigMap changed upstream after signing is not written either — the edge
// keeps the signed value — until a new signed version is applied.
func TestSignedDesiredState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("signed")
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, pubFile := filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub")
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}))
	writeFile(t, pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	// kubectl runs `kubectl kubestellar sign` as kubectl-kubestellar-sign from PATH, as make build lays it out.
	plugins := t.TempDir()
	if err := os.Symlink(pluginBin, filepath.Join(plugins, "kubectl-kubestellar-sign")); err != nil {
		t.Fatal(err)
	}
	// Signed for this sync target (the syncer's --sync-target-name) at a serial, unless told otherwise.
	signAndApply := func(greeting, targets string, serial int) {
		t.Helper()
		manifest, signed := filepath.Join(dir, "app.yaml"), filepath.Join(dir, "app-signed.yaml")
		writeFile(t, manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: %s, labels: {app: web}}
data: {greeting: %s}
`, ns, ns, greeting)))
		cmd := exec.Command(filepath.Join(os.Getenv("E2E_BIN"), "kubectl"), "kubestellar", "sign", "-f", manifest, "--key", keyFile, "-o", signed,
			"--targets", targets, "--serial", strconv.Itoa(serial))
		cmd.Env = append(os.Environ(), "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl kubestellar sign: %v\n%s", err, out)
		}
		kubectl(t, upstream.Kubeconfig, "apply", "-f", signed)
	}
	signAndApply("hello", f.name, 1)
	f.create(f.up, gvrConfigMaps, configMap(ns, "unsigned", map[string]interface{}{"greeting": "run me"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.startSyncer(f.ownConfigs(), withArgs("--signature-policy=Strict", "--signature-keys="+pubFile))

	greeting := func(want string) func(*unstructured.Unstructured) (bool, string) {
		return func(o *unstructured.Unstructured) (bool, string) {
			got, _, _ := unstructured.NestedString(o.Object, "data", "greeting")
			return got == want, "greeting " + got
		}
	}
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", greeting("hello"))
	f.waitEvent(f.up, ns, "unsigned", "SignatureInvalid", "not written at the edge")
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		status, _, msg := conditionOf(o, "ObjectsSynced")
		return status == "False" && strings.Contains(msg, "configmaps "+ns+"/unsigned"), status + ": " + msg
	})
	if _, err := f.get(f.down, gvrConfigMaps, ns, "unsigned"); err == nil {
		t.Error("an unsigned ConfigMap was written at the edge")
	}

	// Changed upstream after signing: refused, the edge keeps the signed value.
	kubectl(t, upstream.Kubeconfig, "-n", ns, "patch", "configmap", "settings", "-p", `{"data":{"greeting":"tampered"}}`)
	f.waitEvent(f.up, ns, "settings", "SignatureInvalid", "differs from what was signed at .data.greeting")
	time.Sleep(time.Second) // not a wait on a result: a write, were one to follow the refusal, would have landed
	if o, err := f.get(f.down, gvrConfigMaps, ns, "settings"); err != nil || o.Object["data"].(map[string]interface{})["greeting"] != "hello" {
		t.Errorf("after a change upstream the signer did not sign, the edge holds %v (%v); want the signed hello", o, err)
	}

	// A new signed version goes through, its serial recorded at the edge.
	signAndApply("bonjour", f.name, 2)
	f.waitFor(f.down, gvrConfigMaps, ns, "settings", func(o *unstructured.Unstructured) (bool, string) {
		ok, msg := greeting("bonjour")(o)
		return ok && o.GetAnnotations()["edge.kubestellar.io/signed-serial"] == "2", msg + ", serial " + o.GetAnnotations()["edge.kubestellar.io/signed-serial"]
	})

	// The older signed version again (a rollback), then one signed for another site (a replay): both
	// refused, the edge keeps bonjour.
	signAndApply("hello", f.name, 1)
	f.waitEvent(f.up, ns, "settings", "SignatureInvalid", "signed with a lower serial than the edge applied (a rollback): serial 1, applied 2")
	signAndApply("hola", "elsewhere", 3)
	f.waitEvent(f.up, ns, "settings", "SignatureInvalid", "signed for other sync targets (elsewhere), not "+f.name)
	if o, err := f.get(f.down, gvrConfigMaps, ns, "settings"); err != nil || o.Object["data"].(map[string]interface{})["greeting"] != "bonjour" {
		t.Errorf("after a rollback and a replay, the edge holds %v (%v); want bonjour", o, err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
