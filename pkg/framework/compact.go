package framework

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/cache"
)

// Compact is how the syncer's informer caches hold an object: as JSON, in two parts (its head,
// apiVersion, kind and metadata; and the rest), with the fields client-go's store and indexers read
// (namespace, name, uid, resourceVersion) at hand. A decoded object is mostly Go maps, which cost
// about twice the object's JSON; a cache of 10,000 ConfigMaps of 1.2 KiB holds 14 MB less this way.
// Readers decode what they need: the head alone (MetaOf) for marks and labels, the whole object
// (ObjectOf, GetFromCache) to map or compare it; each decode is a fresh object the reader may change,
// but for an Event's, which its handlers share.
// A Compact is never changed once made.
type Compact struct {
	namespace, name, resourceVersion string
	uid                              types.UID
	head, rest                       []byte
}

var (
	_ runtime.Object            = &Compact{}
	_ metav1.ObjectMetaAccessor = &Compact{}
)

// Compacted is obj held as a Compact; obj is not changed.
func Compacted(obj *unstructured.Unstructured) (*Compact, error) {
	head := make(map[string]interface{}, 3)
	rest := make(map[string]interface{}, len(obj.Object))
	for k, v := range obj.Object {
		switch k {
		case "apiVersion", "kind", "metadata":
			head[k] = v
		default:
			rest[k] = v
		}
	}
	c := &Compact{namespace: obj.GetNamespace(), name: obj.GetName(), resourceVersion: obj.GetResourceVersion(), uid: obj.GetUID()}
	var err error
	if c.head, err = json.Marshal(head); err != nil {
		return nil, fmt.Errorf("encoding %s/%s for the cache: %w", c.namespace, c.name, err)
	}
	if len(rest) > 0 {
		if c.rest, err = json.Marshal(rest); err != nil {
			return nil, fmt.Errorf("encoding %s/%s for the cache: %w", c.namespace, c.name, err)
		}
	}
	return c, nil
}

// CompactTransform is an informer transform that holds unstructured objects as Compacts; anything
// else (a Compact already, a tombstone) is kept as it is, so it may run twice on an object.
func CompactTransform(obj interface{}) (interface{}, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return Compacted(u)
	}
	return obj, nil
}

// Object decodes the whole object.
func (c *Compact) Object() (*unstructured.Unstructured, error) {
	u, err := c.Head()
	if err != nil {
		return nil, err
	}
	return c.withRest(u)
}

// withRest adds the rest, decoded, to u (the head, decoded).
func (c *Compact) withRest(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if c.rest == nil {
		return u, nil
	}
	var rest map[string]interface{}
	if err := utiljson.Unmarshal(c.rest, &rest); err != nil {
		return nil, fmt.Errorf("decoding %s/%s from the cache: %w", c.namespace, c.name, err)
	}
	for k, v := range rest {
		u.Object[k] = v
	}
	return u, nil
}

// Head decodes apiVersion, kind and metadata only: what the marks, labels and annotations are read
// from, without the object's content.
func (c *Compact) Head() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(c.head, &u.Object); err != nil {
		return nil, fmt.Errorf("decoding %s/%s from the cache: %w", c.namespace, c.name, err)
	}
	return u, nil
}

// GetObjectMeta gives client-go's key and index functions (meta.Accessor) what they read:
// namespace, name, uid and resourceVersion at once, and labels and annotations decoded from the head
// only when asked (an index by label works, at the cost of a decode per object indexed; the key and
// namespace functions cost none).
func (c *Compact) GetObjectMeta() metav1.Object {
	return &compactMeta{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, UID: c.uid, ResourceVersion: c.resourceVersion}, c: c}
}

// compactMeta is a Compact's metadata as meta.Accessor gives it.
type compactMeta struct {
	metav1.ObjectMeta
	c *Compact
}

// GetLabels decodes the labels from the head.
func (m *compactMeta) GetLabels() map[string]string {
	if u, err := m.c.Head(); err == nil {
		return u.GetLabels()
	}
	return nil
}

// GetAnnotations decodes the annotations from the head.
func (m *compactMeta) GetAnnotations() map[string]string {
	if u, err := m.c.Head(); err == nil {
		return u.GetAnnotations()
	}
	return nil
}

// GetObjectKind is empty: the kind is in the head.
func (c *Compact) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy sharing the JSON, which is never changed.
func (c *Compact) DeepCopyObject() runtime.Object {
	out := *c
	return &out
}

// Event is an informer event's Compact as several handlers see it: decoded when a handler first asks,
// its head alone (MetaOf) or whole (ObjectOf), once for all of them. Most events need only the head
// (an object added or deleted is enqueued by its name and marks); a change is compared whole. Its
// handlers share what it decodes: they must not change it, nor keep the Event. Not safe for
// concurrent use: one goroutine passes it to its handlers in turn.
type Event struct {
	compact     *Compact
	head, whole *unstructured.Unstructured
}

// EventOf wraps an informer event's object (or a tombstone's) for its handlers: a Compact in an
// Event, anything else as it is.
func EventOf(obj interface{}) interface{} {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if c, ok := t.Obj.(*Compact); ok {
			t.Obj = &Event{compact: c}
		}
		return t
	}
	if c, ok := obj.(*Compact); ok {
		return &Event{compact: c}
	}
	return obj
}

// decoded is an informer's object (or a tombstone's, or an Event's) as an unstructured object: a
// Compact decoded whole, or only its head; nil for anything else.
func decoded(obj interface{}, headOnly bool) *unstructured.Unstructured {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch t := obj.(type) {
	case *unstructured.Unstructured:
		return t
	case *Event:
		switch {
		case t.whole != nil:
			return t.whole
		case headOnly && t.head != nil:
			return t.head
		case t.head != nil:
			// The head is decoded already: the whole object shares its fields (neither is changed).
			u := &unstructured.Unstructured{Object: make(map[string]interface{}, len(t.head.Object)+2)}
			for k, v := range t.head.Object {
				u.Object[k] = v
			}
			if _, err := t.compact.withRest(u); err != nil {
				return nil // not reached: the cache encoded it
			}
			t.whole = u
			return u
		}
		u := decoded(t.compact, headOnly)
		if headOnly {
			t.head = u
		} else {
			t.whole = u
		}
		return u
	case *Compact:
		var u *unstructured.Unstructured
		var err error
		if headOnly {
			u, err = t.Head()
		} else {
			u, err = t.Object()
		}
		if err != nil {
			return nil // not reached: the cache encoded it
		}
		return u
	}
	return nil
}

// MetaOf is an informer's object (or a tombstone's, or an Event's) with its apiVersion, kind and
// metadata at least: a Compact's head alone, an unstructured object as it is (the cache's: not to be
// changed), an Event's head (shared by its handlers: not to be changed); nil for anything else.
func MetaOf(obj interface{}) *unstructured.Unstructured { return decoded(obj, true) }
