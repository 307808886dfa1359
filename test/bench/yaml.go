package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
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
