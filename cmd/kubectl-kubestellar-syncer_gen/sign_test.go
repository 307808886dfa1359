package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubestellar/syncer/pkg/signature"
)

const toSign = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {greeting: hello}
---
# an empty document is skipped
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}, spec: {replicas: 2}}
`

// TestSign: kubectl kubestellar sign (the binary run as kubectl-kubestellar-sign, and as krew's
// kubectl-kubestellar with the command sign) signs each object, List items included, so that each
// verifies with the public key; a missing key or a document that is no object is an error.
func TestSign(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, manifest := filepath.Join(dir, "key.pem"), filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(toSign), 0o600); err != nil {
		t.Fatal(err)
	}
	trusted := map[string]ed25519.PublicKey{signature.KeyID(pub): pub}
	for _, call := range []struct {
		argv0  string
		args   []string
		expect signature.Expect // what verifies at the edge
		not    signature.Expect // what does not (zero: anything verifies)
	}{
		{argv0: signName, args: []string{"-f", manifest, "--key", keyFile}, expect: signature.Expect{Target: "any"}},
		{argv0: krewName, args: []string{"sign", "-f", manifest, "--key", keyFile}, expect: signature.Expect{Target: "any"}},
		{argv0: signName, args: []string{"-f", manifest, "--key", keyFile, "--targets", "florin,lyon", "--serial", "12"},
			expect: signature.Expect{Target: "lyon", AppliedSerial: 12, RequireClaims: true}, not: signature.Expect{Target: "oslo"}},
		{argv0: signName, args: []string{"-f", manifest, "--key", keyFile, "--serial", "12"},
			expect: signature.Expect{Target: "oslo", AppliedSerial: 11}, not: signature.Expect{Target: "oslo", AppliedSerial: 13}},
	} {
		var out bytes.Buffer
		if err := execute(context.Background(), call.argv0, call.args, &out, io.Discard); err != nil {
			t.Fatalf("%s %v: %v", call.argv0, call.args, err)
		}
		var names []string
		decoder := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				break
			}
			items := []unstructured.Unstructured{*obj}
			if obj.GetKind() == "List" {
				list, _ := obj.ToList()
				items = list.Items
			}
			for i := range items {
				if _, _, err := signature.Verify(&items[i], trusted, call.expect); err != nil {
					t.Errorf("%v: %s %s: %v", call.args, items[i].GetKind(), items[i].GetName(), err)
				}
				if _, _, err := signature.Verify(&items[i], trusted, call.not); call.not != (signature.Expect{}) && err == nil {
					t.Errorf("%v: %s %s verifies with %+v", call.args, items[i].GetKind(), items[i].GetName(), call.not)
				}
				names = append(names, items[i].GetKind()+"/"+items[i].GetName())
			}
		}
		if got := strings.Join(names, " "); got != "ConfigMap/settings Namespace/shop Deployment/web" {
			t.Errorf("%s signed %s", call.argv0, got)
		}
	}
	for _, args := range [][]string{{"-f", manifest}, {"-f", manifest, "--key", manifest}} {
		if err := execute(context.Background(), signName, args, io.Discard, io.Discard); err == nil {
			t.Errorf("sign %v: no error", args)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("just: a map\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := execute(context.Background(), signName, []string{"-f", bad, "--key", keyFile}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "not a Kubernetes object") {
		t.Errorf("a document without kind: %v", err)
	}
}
