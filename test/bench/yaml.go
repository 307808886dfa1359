package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// widgetCRD is a namespaced CRD with a status subresource, for the status-return scenario.
const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.bench.example.com}
spec:
  group: bench.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func applyYAML(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, data []byte) error {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return err
	}
	_, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func waitServed(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) error {
	var listErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, listErr = dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return listErr == nil, nil
	}); err != nil {
		if listErr != nil {
			err = listErr
		}
		return fmt.Errorf("%s not served: %w", gvr.Resource, err)
	}
	return nil
}

// appliedObject is an object applyManifest applied: its resource, namespace and name.
type appliedObject struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// applyManifest server-side applies every object of a multi-document YAML stream on a side, as
// `kubectl apply --server-side` does (every object validated by the apiserver), in order, mapping
// each kind to its resource through the side's discovery. It returns what it applied.
func applyManifest(ctx context.Context, s *side, data []byte) ([]appliedObject, error) {
	var applied []appliedObject
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return applied, nil
			}
			return applied, err
		}
		if len(u.Object) == 0 {
			continue
		}
		gvk := u.GroupVersionKind()
		resources, err := s.kube.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		if err != nil {
			return applied, fmt.Errorf("%s %s: %w", gvk, u.GetName(), err)
		}
		var gvr schema.GroupVersionResource
		for _, r := range resources.APIResources {
			if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
				gvr = gvk.GroupVersion().WithResource(r.Name)
			}
		}
		if gvr.Empty() {
			return applied, fmt.Errorf("%s is not served on %s", gvk, s.name)
		}
		body, err := u.MarshalJSON()
		if err != nil {
			return applied, err
		}
		if _, err := s.dyn.Resource(gvr).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "bench", Force: ptr.To(true)}); err != nil {
			return applied, fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
		applied = append(applied, appliedObject{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()})
	}
}
