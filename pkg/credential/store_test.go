package credential

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// TestSecretStore: nothing stored reads as ""; Save fills the empty Secret the manifest made (its
// labels and other keys stay); a missing Secret is an error naming the remedy.
func TestSecretStore(t *testing.T) {
	ctx := context.Background()
	name := types.NamespacedName{Namespace: "kbs", Name: "kbs-upstream-token"}
	client := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name, Labels: map[string]string{"app": "kbs"}}})
	s := SecretStore{Secrets: client.CoreV1(), Secret: name}
	if v, err := s.Load(ctx); err != nil || v != "" {
		t.Fatalf("empty Secret: %q, %v", v, err)
	}
	if err := s.Save(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Load(ctx); err != nil || v != "t1" {
		t.Fatalf("after Save: %q, %v", v, err)
	}
	got, _ := client.CoreV1().Secrets(name.Namespace).Get(ctx, name.Name, metav1.GetOptions{})
	if got.Labels["app"] != "kbs" {
		t.Errorf("the manifest's labels are gone: %v", got.Labels)
	}

	missing := SecretStore{Secrets: client.CoreV1(), Secret: types.NamespacedName{Namespace: "kbs", Name: "other"}}
	if v, err := missing.Load(ctx); err != nil || v != "" {
		t.Fatalf("missing Secret: %q, %v", v, err)
	}
	// The syncer may not create Secrets: a missing one is an error that says what to do.
	if err := missing.Save(ctx, "t2"); err == nil || !strings.Contains(err.Error(), "apply the syncer's manifest again") {
		t.Errorf("saving into a missing Secret: %v", err)
	}
}
