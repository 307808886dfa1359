package v2alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/manifests"
	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
)

// crdCase is one CRD of the manifests package (what the bootstrap plugin and the e2e suite install)
// and the Go type it serves.
type crdCase struct {
	kind string
	crd  []byte
	typ  reflect.Type
	// fields and descriptions are how many of each the walks found when the tests were written.
	fields, descriptions int
}

var crdCases = []crdCase{
	{"SyncerConfig", manifests.SyncerConfigCRD, reflect.TypeOf(edgev1.SyncerConfig{}), 37, 20},
	{"EdgeSyncConfig", manifests.EdgeSyncConfigCRD, reflect.TypeOf(edgev1.EdgeSyncConfig{}), 86, 38},
}

// crdSchema is the openAPIV3Schema of a CRD.
func crdSchema(t *testing.T, raw []byte) map[string]interface{} {
	t.Helper()
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]interface{} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == edgev1.SchemeGroupVersion.Version {
			if v.Schema.OpenAPIV3Schema == nil {
				t.Fatalf("version %s has no openAPIV3Schema", v.Name)
			}
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("the CRD serves no version %s", edgev1.SchemeGroupVersion.Version)
	return nil
}

// walkSchema calls fn on the schema node at path and on every property under it (array items are
// followed, their path marked with []).
func walkSchema(path string, node map[string]interface{}, fn func(path string, node map[string]interface{})) {
	fn(path, node)
	props, _ := node["properties"].(map[string]interface{})
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if child, ok := props[name].(map[string]interface{}); ok {
			walkSchema(join(path, name), child, fn)
		}
	}
	if items, ok := node["items"].(map[string]interface{}); ok {
		walkItems(path+"[]", items, fn)
	}
	if extra, ok := node["additionalProperties"].(map[string]interface{}); ok {
		walkItems(path+"{}", extra, fn)
	}
}

// walkItems walks the properties of an array's items (or a map's values) without counting the items
// schema itself as a field: the array property carries the description.
func walkItems(path string, node map[string]interface{}, fn func(path string, node map[string]interface{})) {
	props, _ := node["properties"].(map[string]interface{})
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if child, ok := props[name].(map[string]interface{}); ok {
			walkSchema(path+"."+name, child, fn)
		}
	}
	if items, ok := node["items"].(map[string]interface{}); ok {
		walkItems(path+"[]", items, fn)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// TestCRDDescribesEveryField: every field of each CRD's schema, spec and status, nested items and
// metav1.Condition's fields included, has a description, so that `kubectl explain syncerconfig
// --recursive` explains the whole API. The root metadata is the exception the apiserver imposes.
func TestCRDDescribesEveryField(t *testing.T) {
	for _, c := range crdCases {
		t.Run(c.kind, func(t *testing.T) { describesEveryField(t, c) })
	}
}

func describesEveryField(t *testing.T, c crdCase) {
	checked := 0
	var missing []string
	walkSchema("", crdSchema(t, c.crd), func(path string, node map[string]interface{}) {
		if path == "metadata" {
			// The apiserver refuses a CRD whose root metadata says anything but its type ("must not
			// specify anything other than name and generateName"): ObjectMeta is described by the
			// apiserver itself.
			if len(node) != 1 || node["type"] != "object" {
				t.Errorf("metadata is %v: the apiserver accepts only {type: object} there", node)
			}
			return
		}
		checked++
		if d, _ := node["description"].(string); strings.TrimSpace(d) == "" {
			if path == "" {
				path = "(the root object)"
			}
			missing = append(missing, path)
		}
	})
	t.Logf("checked the descriptions of %d fields of the %s CRD schema", checked, c.kind)
	if checked < c.fields {
		t.Errorf("only %d fields walked (%d when this test was written): the walk missed part of the schema", checked, c.fields)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d fields of the %s CRD schema have no description:\n  %s", len(missing), checked, c.kind, strings.Join(missing, "\n  "))
	}
}

// goDocs are the doc comments of types.go: type name -> its doc, and "Type.Field" -> the field's doc,
// each with its whitespace collapsed.
func goDocs(t *testing.T) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.TYPE {
			continue
		}
		for _, spec := range gen.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil {
				doc = gen.Doc
			}
			docs[ts.Name.Name] = collapse(doc.Text())
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				names := field.Names
				if sel, ok := field.Type.(*ast.SelectorExpr); ok && len(names) == 0 {
					names = []*ast.Ident{sel.Sel} // an embedded field, named by its type (metav1.ObjectMeta)
				}
				for _, name := range names {
					docs[ts.Name.Name+"."+name.Name] = collapse(field.Doc.Text())
				}
			}
		}
	}
	return docs
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestCRDDescriptionsAreTheGoDocs: each CRD's description of every field that a type of this package
// declares is that field's Go doc comment (and the root's is its type's), so the two never say
// different things. Fields of imported types (TypeMeta, metav1.Condition, the inline
// metav1.GroupResource) are described in the CRD only, and metadata not at all. Every CRD property must be a field of the Go
// types.
func TestCRDDescriptionsAreTheGoDocs(t *testing.T) {
	for _, c := range crdCases {
		t.Run(c.kind, func(t *testing.T) { descriptionsAreTheGoDocs(t, c) })
	}
}

func descriptionsAreTheGoDocs(t *testing.T, c crdCase) {
	docs := goDocs(t)
	schema := crdSchema(t, c.crd)
	compared := 0
	check := func(path, key string, node map[string]interface{}) {
		compared++
		got, _ := node["description"].(string)
		if want := docs[key]; collapse(got) != want {
			t.Errorf("%s: the CRD's description differs from the doc comment of %s\n  crd: %q\n  go:  %q", path, key, collapse(got), want)
		}
	}
	check("(root)", c.typ.Name(), schema)
	var walk func(path string, node map[string]interface{}, typ reflect.Type)
	walk = func(path string, node map[string]interface{}, typ reflect.Type) {
		props, _ := node["properties"].(map[string]interface{})
		for name, raw := range props {
			child, _ := raw.(map[string]interface{})
			field, owner, ok := jsonField(typ, name)
			if !ok {
				t.Errorf("%s: the CRD has a property that %s has no field for", join(path, name), typ)
				continue
			}
			if owner.PkgPath() == reflect.TypeOf(edgev1.SyncerConfig{}).PkgPath() && join(path, name) != "metadata" {
				check(join(path, name), owner.Name()+"."+field.Name, child)
			}
			ft := field.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Slice:
				elem := ft.Elem()
				if items, ok := child["items"].(map[string]interface{}); ok && elem.Kind() == reflect.Struct {
					walk(join(path, name)+"[]", items, elem)
				}
			case ft.Kind() == reflect.Struct:
				walk(join(path, name), child, ft)
			}
		}
	}
	walk("", schema, c.typ)
	t.Logf("compared %d %s CRD descriptions with the Go doc comments of types.go", compared, c.kind)
	if compared < c.descriptions {
		t.Errorf("only %d descriptions compared: the walk missed part of the schema", compared)
	}
}

// jsonField finds the field of struct type typ (or of a struct it inlines) that JSON names name, and
// the struct type that declares it.
func jsonField(typ reflect.Type, name string) (reflect.StructField, reflect.Type, bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && (strings.Contains(opts, "inline") || f.Tag.Get("json") == "") {
			if inner, owner, ok := jsonField(f.Type, name); ok {
				return inner, owner, true
			}
			continue
		}
		if tag == name {
			return f, typ, true
		}
	}
	return reflect.StructField{}, nil, false
}
