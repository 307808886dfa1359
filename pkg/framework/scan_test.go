package framework

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestScanLabelled: pages are followed until visit says stop; a resource the syncer may not list
// holds nothing (no error); another error is returned, naming the resource and the selector.
func TestScanLabelled(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	page := func(names []string, cont string) *unstructured.UnstructuredList {
		list := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
		for _, n := range names {
			u := unstructured.Unstructured{}
			u.SetName(n)
			u.SetLabels(map[string]string{"owner": "x"}) // the fake client filters by the selector itself
			list.Items = append(list.Items, u)
		}
		list.SetContinue(cont)
		return list
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"})
	var asked []string
	client.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		restrictions := a.(clienttesting.ListAction).GetListRestrictions()
		asked = append(asked, restrictions.Labels.String())
		if len(asked) == 1 {
			return true, page([]string{"a", "b"}, "next"), nil
		}
		return true, page([]string{"c", "d"}, ""), nil
	})
	var seen []string
	err := ScanLabelled(context.Background(), client, gvr, "owner=x", 2, func(u *unstructured.Unstructured) bool {
		seen = append(seen, u.GetName())
		return u.GetName() != "c"
	})
	if err != nil || strings.Join(seen, ",") != "a,b,c" || len(asked) != 2 || asked[0] != "owner=x" {
		t.Errorf("scan saw %v, asked %v, err %v; want a,b,c over two pages of owner=x", seen, asked, err)
	}

	for _, tc := range []struct {
		err  error
		want string
	}{
		{apierrors.NewForbidden(gvr.GroupResource(), "", errors.New("no")), ""},
		{apierrors.NewNotFound(gvr.GroupResource(), ""), ""},
		{errors.New("connection refused"), "looking for configmaps labelled owner=x: connection refused"},
	} {
		failing := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"})
		failing.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
		err := ScanLabelled(context.Background(), failing, gvr, "owner=x", 1, func(*unstructured.Unstructured) bool { return true })
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%v: ScanLabelled = %q, want %q", tc.err, got, tc.want)
		}
	}
}
