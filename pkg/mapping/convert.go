package mapping

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RenaturedFromAnnotation records, on a downstream object written in another form than its upstream
// object (a conversion renamed its group, version, kind or name), the upstream object's identity:
// <Kind>.<group>/<version>/<namespace>/<name>. It is informational: the syncer finds the upstream
// object of a renamed downstream one from the conversions themselves, so it works across restarts
// and for objects written before the annotation existed.
const RenaturedFromAnnotation = "edge.kubestellar.io/renatured-from"

// crdKind is the kind whose named conversions also rename the API a CRD defines.
var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// Form is one side of a conversion: a group, kind and optional version and name.
type Form struct {
	Group, Version, Kind, Name string
}

// ConversionRule renames objects between the mailbox workspace (Up, the denatured form) and the edge
// (Down, the natural form). With names it renames one object; without, every object of its kind.
type ConversionRule struct {
	Up, Down Form
	// Config and Field name where the rule comes from, for problems.
	Config, Field string
}

// ConversionError is a rule that does not apply, and why.
type ConversionError struct {
	Config, Field string
	Reason        string
}

func (e ConversionError) Error() string { return e.Config + " " + e.Field + ": " + e.Reason }

// Conversions are the merged conversion rules of every config. The zero value (and nil) renames
// nothing. Built once per selection, read concurrently.
type Conversions struct {
	// kinds maps an upstream group and kind to its downstream form (version "" keeps the version);
	// upVersion, when set, limits the rule to that upstream version.
	kinds map[schema.GroupKind]kindRule
	// groups maps an upstream group to a downstream group: implied by a renamed CRD, for every kind
	// of the group that no kind rule names.
	groups map[string]string
	// names maps an upstream kind's object names to their downstream names.
	names map[schema.GroupKind]map[string]string
}

type kindRule struct {
	upVersion string
	down      schema.GroupVersionKind // Version may be empty: keep the upstream version
}

// NewConversions merges rules. A rule missing a kind on either side, or rules that share one side
// (group, kind and name) but differ in the rest, are returned as errors naming their origins; such
// rules do not apply, the rest do. Identical rules from several configs are one.
func NewConversions(rules []ConversionRule) (*Conversions, []ConversionError) {
	c := &Conversions{kinds: map[schema.GroupKind]kindRule{}, groups: map[string]string{}, names: map[schema.GroupKind]map[string]string{}}
	var errs []ConversionError
	var valid []ConversionRule
	for _, r := range rules {
		if err := r.validate(); err != nil {
			errs = append(errs, ConversionError{Config: r.Config, Field: r.Field, Reason: err.Error()})
			continue
		}
		valid = append(valid, r)
	}
	same := func(a, b Form) bool { return a.Group == b.Group && a.Kind == b.Kind && a.Name == b.Name }
	rejected := make([]bool, len(valid))
	for i, a := range valid {
		for j, b := range valid[:i] {
			if (same(a.Up, b.Up) || same(a.Down, b.Down)) && (a.Up != b.Up || a.Down != b.Down) {
				errs = append(errs, ConversionError{Config: a.Config, Field: a.Field,
					Reason: fmt.Sprintf("conversion disagrees with %s %s; neither applies", b.Config, b.Field)})
				rejected[i], rejected[j] = true, true
			}
		}
	}
	for i, r := range valid {
		if rejected[i] {
			continue
		}
		upGK := schema.GroupKind{Group: r.Up.Group, Kind: r.Up.Kind}
		if r.Up.Name == "" {
			c.kinds[upGK] = kindRule{upVersion: r.Up.Version, down: schema.GroupVersionKind{Group: r.Down.Group, Version: r.Down.Version, Kind: r.Down.Kind}}
			continue
		}
		if c.names[upGK] == nil {
			c.names[upGK] = map[string]string{}
		}
		c.names[upGK][r.Up.Name] = r.Down.Name
		if upGK == crdKind {
			_, upGroup, _ := crdNameParts(r.Up.Name)
			_, downGroup, _ := crdNameParts(r.Down.Name)
			if upGroup != downGroup {
				c.groups[upGroup] = downGroup
			}
		}
	}
	return c, errs
}

// validate checks one rule alone.
func (r ConversionRule) validate() error {
	if r.Up.Kind == "" || r.Down.Kind == "" {
		return fmt.Errorf("a conversion needs the kind on both sides")
	}
	if (r.Up.Name == "") != (r.Down.Name == "") {
		return fmt.Errorf("a conversion renames either one object (a name on both sides) or every object of its kind (no name on either side)")
	}
	if r.Up.Name != "" && (schema.GroupKind{Group: r.Up.Group, Kind: r.Up.Kind}) == crdKind {
		if (schema.GroupKind{Group: r.Down.Group, Kind: r.Down.Kind}) != crdKind {
			return fmt.Errorf("a CustomResourceDefinition can only be renamed into a CustomResourceDefinition")
		}
		for _, n := range []string{r.Up.Name, r.Down.Name} {
			if _, _, err := crdNameParts(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// crdNameParts splits a CRD name into its plural and group.
func crdNameParts(name string) (plural, group string, err error) {
	plural, group, ok := strings.Cut(name, ".")
	if !ok || plural == "" || group == "" {
		return "", "", fmt.Errorf("CustomResourceDefinition name %q is not <plural>.<group>", name)
	}
	return plural, group, nil
}

// Empty tells whether there is nothing to rename.
func (c *Conversions) Empty() bool {
	return c == nil || (len(c.kinds) == 0 && len(c.groups) == 0 && len(c.names) == 0)
}

// Down is the downstream group, version and kind of an upstream one.
func (c *Conversions) Down(up schema.GroupVersionKind) schema.GroupVersionKind {
	if c == nil {
		return up
	}
	if r, ok := c.kinds[up.GroupKind()]; ok && (r.upVersion == "" || r.upVersion == up.Version) {
		out := r.down
		if out.Version == "" {
			out.Version = up.Version
		}
		return out
	}
	if g, ok := c.groups[up.Group]; ok {
		return schema.GroupVersionKind{Group: g, Version: up.Version, Kind: up.Kind}
	}
	return up
}

// Up is the upstream group, version and kind of a downstream one: the inverse of Down.
func (c *Conversions) Up(down schema.GroupVersionKind) schema.GroupVersionKind {
	if c == nil {
		return down
	}
	for upGK, r := range c.kinds {
		if r.down.Group == down.Group && r.down.Kind == down.Kind && (r.down.Version == "" || r.down.Version == down.Version) {
			v := r.upVersion
			if v == "" || r.down.Version == "" {
				v = down.Version
			}
			return upGK.WithVersion(v)
		}
	}
	for upGroup, downGroup := range c.groups {
		if downGroup == down.Group {
			if _, named := c.kinds[schema.GroupKind{Group: upGroup, Kind: down.Kind}]; !named {
				return schema.GroupVersionKind{Group: upGroup, Version: down.Version, Kind: down.Kind}
			}
		}
	}
	return down
}

// RenamedGroups maps each upstream group that a conversion renames (a renamed CRD's group, or the
// group of a renamed kind) to the downstream groups its objects go to.
func (c *Conversions) RenamedGroups() map[string][]string {
	out := map[string][]string{}
	add := func(up, down string) {
		if up != down && !slices.Contains(out[up], down) {
			out[up] = append(out[up], down)
		}
	}
	if c == nil {
		return out
	}
	for up, down := range c.groups {
		add(up, down)
	}
	for gk, r := range c.kinds {
		add(gk.Group, r.down.Group)
	}
	return out
}

// For is how the objects of an upstream kind are renamed; nil when they are not.
func (c *Conversions) For(up schema.GroupVersionKind) *Rename {
	if c == nil {
		return nil
	}
	down := c.Down(up)
	names := c.names[up.GroupKind()]
	if down == up && len(names) == 0 {
		return nil
	}
	r := &Rename{Up: up, Down: down, names: names, upNames: map[string]string{}}
	for u, d := range names {
		r.upNames[d] = u
	}
	if up.GroupKind() == crdKind {
		r.crds = c
	}
	return r
}

// String lists the rules, for logs and fingerprints.
func (c *Conversions) String() string {
	if c.Empty() {
		return ""
	}
	var parts []string
	for gk, r := range c.kinds {
		parts = append(parts, fmt.Sprintf("%s/%s->%s", gk, r.upVersion, r.down))
	}
	for u, d := range c.groups {
		parts = append(parts, fmt.Sprintf("group %s->%s", u, d))
	}
	for gk, names := range c.names {
		for u, d := range names {
			parts = append(parts, fmt.Sprintf("%s %s->%s", gk, u, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// Rename is how one resource's objects are renamed between the sides: group, version and kind, and
// the names of single objects. A nil Rename renames nothing.
type Rename struct {
	Up, Down schema.GroupVersionKind
	names    map[string]string // upstream name -> downstream name
	upNames  map[string]string // downstream name -> upstream name
	// crds, for CustomResourceDefinitions, renames the API a renamed CRD defines.
	crds *Conversions
}

// DownName is the downstream name of an upstream object.
func (r *Rename) DownName(up string) string {
	if r != nil {
		if d, ok := r.names[up]; ok {
			return d
		}
	}
	return up
}

// UpName is the upstream name of a downstream object.
func (r *Rename) UpName(down string) string {
	if r != nil {
		if u, ok := r.upNames[down]; ok {
			return u
		}
	}
	return down
}

// RenamesObjects tells whether some objects get another name on the other side.
func (r *Rename) RenamesObjects() bool { return r != nil && len(r.names) > 0 }

// toDownstream renames a copy of an upstream object in place; it tells whether it changed anything.
func (r *Rename) toDownstream(obj *unstructured.Unstructured) bool {
	if r == nil {
		return false
	}
	upName := obj.GetName()
	changed := false
	if r.Down != r.Up {
		obj.SetAPIVersion(r.Down.GroupVersion().String())
		obj.SetKind(r.Down.Kind)
		changed = true
	}
	if d := r.DownName(upName); d != upName {
		obj.SetName(d)
		changed = true
		if r.crds != nil {
			renameCRD(obj, d, r.crds)
		}
	}
	return changed
}

// toUpstream renames a copy of a downstream object in place.
func (r *Rename) toUpstream(obj *unstructured.Unstructured) {
	if r == nil {
		return
	}
	downName := obj.GetName()
	if r.Down != r.Up {
		obj.SetAPIVersion(r.Up.GroupVersion().String())
		obj.SetKind(r.Up.Kind)
	}
	if u := r.UpName(downName); u != downName {
		obj.SetName(u)
		if r.crds != nil {
			renameCRD(obj, u, nil)
		}
	}
}

// renameCRD makes a CRD's spec agree with its new name <plural>.<group>: spec.group and
// spec.names.plural, and the kind when a conversion renames the kind too.
func renameCRD(obj *unstructured.Unstructured, name string, c *Conversions) {
	plural, group, err := crdNameParts(name)
	if err != nil {
		return
	}
	oldGroup, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	_ = unstructured.SetNestedField(obj.Object, group, "spec", "group")
	_ = unstructured.SetNestedField(obj.Object, plural, "spec", "names", "plural")
	if c == nil {
		return
	}
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	if r, ok := c.kinds[schema.GroupKind{Group: oldGroup, Kind: kind}]; ok && r.down.Group == group && r.down.Kind != kind {
		_ = unstructured.SetNestedField(obj.Object, r.down.Kind, "spec", "names", "kind")
		if list, ok, _ := unstructured.NestedString(obj.Object, "spec", "names", "listKind"); ok && list == kind+"List" {
			_ = unstructured.SetNestedField(obj.Object, r.down.Kind+"List", "spec", "names", "listKind")
		}
	}
}

// upstreamIdentity is the value of RenaturedFromAnnotation for an upstream object.
func upstreamIdentity(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return gvk.GroupKind().String() + "/" + gvk.Version + "/" + obj.GetNamespace() + "/" + obj.GetName()
}
