package informermanager

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
)

// NamespaceScope is the Spec.Namespaces of the given namespaces: sorted, without duplicates, joined
// by commas ("" for none, i.e. cluster-wide). Namespace names hold no commas.
func NamespaceScope(namespaces []string) string {
	sorted := append([]string(nil), namespaces...)
	sort.Strings(sorted)
	out := sorted[:0]
	for i, ns := range sorted {
		if ns != "" && (i == 0 || ns != sorted[i-1]) {
			out = append(out, ns)
		}
	}
	return strings.Join(out, ",")
}

// NamespaceList is the namespaces of a Spec, sorted; nil when it is cluster-wide.
func (s Spec) NamespaceList() []string {
	if s.Namespaces == "" {
		return nil
	}
	return strings.Split(s.Namespaces, ",")
}

// namespaced is one cache over several namespaces, made of one informer per namespace (each listing
// and watching its namespace only). Handlers are added to every namespace's informer and called one
// event at a time, as one informer calls them; a read goes to the informer of its namespace; a
// namespace is synced once its informer is, so that a namespace listed late holds up no other.
type namespaced struct {
	names []string // sorted
	parts map[string]*informer
}

func newNamespaced(parts map[string]*informer) *namespaced {
	c := &namespaced{parts: parts}
	for ns := range parts {
		c.names = append(c.names, ns)
	}
	sort.Strings(c.names)
	return c
}

var _ framework.Cache = &namespaced{}

// Get reads the object from its namespace's informer; an object of another namespace is absent.
func (c *namespaced) Get(namespace, name string) (interface{}, error) {
	p, ok := c.parts[namespace]
	if !ok {
		return nil, nil
	}
	return p.Get(namespace, name)
}

// List is the objects of one namespace, or of all of them.
func (c *namespaced) List(namespace string) []interface{} {
	if namespace != "" {
		if p, ok := c.parts[namespace]; ok {
			return p.List("")
		}
		return nil
	}
	var out []interface{}
	for _, ns := range c.names {
		out = append(out, c.parts[ns].List("")...)
	}
	return out
}

// Keys are the keys of one namespace's objects, or of all of them.
func (c *namespaced) Keys(namespace string) []string {
	if namespace != "" {
		if p, ok := c.parts[namespace]; ok {
			return p.Keys("")
		}
		return nil
	}
	var out []string
	for _, ns := range c.names {
		out = append(out, c.parts[ns].Keys("")...)
	}
	return out
}

// registrations are one handler's registrations with the namespaces' informers.
type registrations map[string]framework.Registration

// AddHandler adds the handler to every namespace's informer; all or none.
func (c *namespaced) AddHandler(h cache.ResourceEventHandler) (framework.Registration, error) {
	serial := &serialHandler{next: h}
	regs := registrations{}
	for _, ns := range c.names {
		r, err := c.parts[ns].AddHandler(serial)
		if err != nil {
			_ = c.RemoveHandler(regs)
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		regs[ns] = r
	}
	return regs, nil
}

// RemoveHandler removes a handler from every namespace's informer.
func (c *namespaced) RemoveHandler(r framework.Registration) error {
	regs, ok := r.(registrations)
	if !ok {
		return errNotOurs(r)
	}
	var errs []error
	for ns, reg := range regs {
		if err := c.parts[ns].RemoveHandler(reg); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

// Synced tells whether a namespace is listed (a namespace not watched holds nothing to list), or
// for "" whether every namespace is.
func (c *namespaced) Synced(namespace string) bool {
	return c.every(namespace, (*informer).Synced)
}

// Complete tells whether a namespace's informer (every one, for "") is complete.
func (c *namespaced) Complete(namespace string) bool {
	return c.every(namespace, (*informer).Complete)
}

func (c *namespaced) every(namespace string, f func(*informer, string) bool) bool {
	if namespace != "" {
		p, ok := c.parts[namespace]
		return !ok || f(p, namespace)
	}
	for _, ns := range c.names {
		if !f(c.parts[ns], ns) {
			return false
		}
	}
	return true
}

// serialHandler calls its handler for one event at a time: the namespaces' informers deliver
// their events from goroutines of their own, and a handler may count on a single informer's
// one-at-a-time delivery.
type serialHandler struct {
	mu   sync.Mutex
	next cache.ResourceEventHandler
}

func (h *serialHandler) OnAdd(obj interface{}, isInInitialList bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next.OnAdd(obj, isInInitialList)
}

func (h *serialHandler) OnUpdate(oldObj, newObj interface{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next.OnUpdate(oldObj, newObj)
}

func (h *serialHandler) OnDelete(obj interface{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next.OnDelete(obj)
}
