package e2e

import (
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// widgetCRD is a small namespaced CRD used by several tests.
func widgetCRD(group string, schemaProps map[string]interface{}) *unstructured.Unstructured {
	if schemaProps == nil {
		schemaProps = map[string]interface{}{"spec": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	}
	return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets."+group, map[string]interface{}{
		"spec": map[string]interface{}{
			"group": group,
			"names": map[string]interface{}{"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
			"scope": "Namespaced",
			"versions": []interface{}{map[string]interface{}{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]interface{}{"status": map[string]interface{}{}},
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type": "object",
					"properties": map[string]interface{}{
						"spec":   schemaProps["spec"],
						"status": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	})
}

func established(o *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == "Established" && m["status"] == "True" {
			return true, ""
		}
	}
	return false, "not Established"
}

// TestSmokeCRDAndDeployment proves the environment is a real control plane: a CRD is served once
// Established, a custom resource and a Deployment round-trip, and the controller manager gives a
// Deployment downstream a real status.
func TestSmokeCRDAndDeployment(t *testing.T) {
	f := newFixture(t)
	group := f.name + ".e2e.example.com"
	f.create(f.up, gvrCRDs, widgetCRD(group, nil))
	t.Cleanup(func() { f.delete(f.up, gvrCRDs, "", "widgets."+group) })
	f.waitFor(f.up, gvrCRDs, "", "widgets."+group, established)
	ns := f.namespace("ns")
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	f.create(f.up, widgets, obj(group+"/v1", "Widget", ns, "w1", map[string]interface{}{"spec": map[string]interface{}{"size": int64(3)}}))
	w := f.waitFor(f.up, widgets, ns, "w1", nil)
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 3 {
		t.Fatalf("widget read back with spec.size %d, want 3", size)
	}

	for _, side := range []clients{f.up, f.down} {
		if side.cfg.Host == f.down.cfg.Host {
			f.create(side, gvrNamespaces, obj("v1", "Namespace", "", ns, nil))
		}
		f.create(side, gvrDeployments, deployment(ns, "web", 2))
		d := f.waitFor(side, gvrDeployments, ns, "web", nil)
		if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
			t.Fatalf("deployment read back with %d replicas", r)
		}
	}
	// Only downstream runs a controller manager: its Deployment gets a status there.
	f.waitFor(f.down, gvrDeployments, ns, "web", func(o *unstructured.Unstructured) (bool, string) {
		g, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return g >= 1, fmt.Sprintf("status.observedGeneration = %d", g)
	})
}

func deployment(namespace, name string, replicas int64) *unstructured.Unstructured {
	labels := map[string]interface{}{"app": name}
	return obj("apps/v1", "Deployment", namespace, name, map[string]interface{}{"spec": map[string]interface{}{
		"replicas": replicas,
		"selector": map[string]interface{}{"matchLabels": labels},
		"template": map[string]interface{}{
			"metadata": map[string]interface{}{"labels": labels},
			"spec": map[string]interface{}{"containers": []interface{}{
				map[string]interface{}{"name": "app", "image": "registry.invalid/app:1"},
			}},
		},
	}})
}

// TestSmokeTokenRequestAndRBAC proves authentication and authorization are real: a ServiceAccount
// token from TokenRequest authenticates as that ServiceAccount, is refused (403) what RBAC does not
// grant, and is allowed once a Role grants it.
func TestSmokeTokenRequestAndRBAC(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	kube := f.up.kube
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(f.ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	robot := kubernetes.NewForConfigOrDie(upstream.TokenConfig(tr.Status.Token))
	review, err := robot.AuthenticationV1().SelfSubjectReviews().Create(f.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the token: %v", err)
	}
	if want := "system:serviceaccount:" + ns + ":robot"; review.Status.UserInfo.Username != want {
		t.Fatalf("token authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
	_, err = robot.CoreV1().ConfigMaps(ns).List(f.ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing configmaps without a grant: got %v, want 403 Forbidden", err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(f.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-cm"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(f.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-cm"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-cm"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10e9, "the Role to take effect", func() (bool, string) {
		_, err := robot.CoreV1().ConfigMaps(ns).List(f.ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := robot.CoreV1().Secrets(ns).List(f.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing secrets: got %v, want 403 Forbidden", err)
	}
}
