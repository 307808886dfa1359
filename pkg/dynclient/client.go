package dynclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"
)

// Client is a dynamic client whose watches and creates decode in one pass; the rest is client-go's.
type Client struct {
	dynamic.Interface
	rest rest.Interface
	// watches is rest without its rate limiter: client-go does not rate-limit watches either.
	watches rest.Interface
	params  runtime.ParameterCodec
}

var _ dynamic.Interface = &Client{}

// NewForConfig makes a Client as dynamic.NewForConfig makes client-go's: one REST client (one rate
// limiter, one HTTP client) serves both, and the watches go through the same HTTP client without
// the rate limiter, as client-go's do. It speaks JSON only (client-go may ask for CBOR when its
// ClientsAllowCBOR gate is on; the one-pass decoders read JSON).
func NewForConfig(cfg *rest.Config) (*Client, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	config := dynamic.ConfigFor(cfg)
	config.GroupVersion = nil
	config.APIPath = "/if-not-present"
	config.ContentType, config.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	rc, err := rest.UnversionedRESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	unlimited := rest.CopyConfig(config)
	unlimited.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	watches, err := rest.UnversionedRESTClientForConfigAndClient(unlimited, httpClient)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, v1)
	return &Client{Interface: dynamic.New(rc), rest: rc, watches: watches, params: runtime.NewParameterCodec(scheme)}, nil
}

// validNamespace refuses a namespace that is not a path segment, as client-go's dynamic client does.
func validNamespace(namespace string) error {
	if msgs := rest.IsValidPathSegmentName(namespace); len(msgs) != 0 {
		return fmt.Errorf("invalid namespace %q: %v", namespace, msgs)
	}
	return nil
}

// v1 is the version of the options' query parameters, as client-go's dynamic client encodes them.
var v1 = schema.GroupVersion{Version: "v1"}

// Resource is the client of one resource.
func (c *Client) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	all := c.Interface.Resource(gvr)
	return &namespaceable{resource: resource{ResourceInterface: all, c: c, gvr: gvr}, all: all}
}

type namespaceable struct {
	resource
	all dynamic.NamespaceableResourceInterface
}

func (n *namespaceable) Namespace(namespace string) dynamic.ResourceInterface {
	return &resource{ResourceInterface: n.all.Namespace(namespace), c: n.c, gvr: n.gvr, namespace: namespace}
}

// resource overrides Create and Watch; everything else is client-go's.
type resource struct {
	dynamic.ResourceInterface
	c         *Client
	gvr       schema.GroupVersionResource
	namespace string
}

// path is the resource's path, as client-go's dynamic client makes it.
func (r *resource) path(name string) []string {
	p := make([]string, 0, 7)
	if r.gvr.Group == "" {
		p = append(p, "api")
	} else {
		p = append(p, "apis", r.gvr.Group)
	}
	p = append(p, r.gvr.Version)
	if r.namespace != "" {
		p = append(p, "namespaces", r.namespace)
	}
	p = append(p, r.gvr.Resource)
	if name != "" {
		p = append(p, name)
	}
	return p
}

// Create creates obj and decodes the apiserver's answer in one pass. A subresource's create is
// client-go's.
func (r *resource) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if len(subresources) > 0 {
		return r.ResourceInterface.Create(ctx, obj, opts, subresources...)
	}
	if err := validNamespace(r.namespace); err != nil {
		return nil, err
	}
	req := r.c.rest.Post().AbsPath(r.path("")...).
		Body(obj) // encoded as client-go's dynamic client encodes it
	if len(opts.DryRun) == 0 {
		// The options the syncer creates with, as the parameter codec writes them (its conversion
		// by reflection cost a tenth of a create).
		if opts.FieldManager != "" {
			req = req.Param("fieldManager", opts.FieldManager)
		}
		if opts.FieldValidation != "" {
			req = req.Param("fieldValidation", opts.FieldValidation)
		}
	} else {
		req = req.SpecificallyVersionedParams(&opts, r.c.params, v1)
	}
	result := req.Do(ctx)
	if err := result.Error(); err != nil {
		return nil, err // the apiserver's Status, as client-go's Into returns it
	}
	raw, _ := result.Raw()
	return decodeObject(raw)
}

// decodeObject decodes one object as client-go's unstructured decoding does: numbers that are
// integers as int64, others as float64; a kind required.
func decodeObject(raw []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &u.Object); err != nil {
		return nil, err
	}
	if u.Object == nil {
		return nil, fmt.Errorf("the apiserver answered %q, not an object", bytes.TrimSpace(raw))
	}
	if u.GetKind() == "" {
		return nil, runtime.NewMissingKindErr(string(raw))
	}
	return u, nil
}

// Watch watches the resource, decoding each event in one pass as it streams in.
func (r *resource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := validNamespace(r.namespace); err != nil {
		return nil, err
	}
	opts.Watch = true
	body, err := r.c.watches.Get().AbsPath(r.path("")...).
		SpecificallyVersionedParams(&opts, r.c.params, v1).
		Stream(ctx)
	if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
		// As client-go: a connection dropped while the watch opens is an empty watch, which the
		// reflector opens again, not an error.
		return watch.NewEmptyWatch(), nil
	}
	if err != nil {
		return nil, err
	}
	return watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), newDecoder(body),
		// As client-go reports what it cannot decode: the cause is unknown, hence 500.
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")), nil
}

// decoder reads the events of a JSON watch stream, each in one pass.
type decoder struct {
	body io.ReadCloser
	json sigsjson.Decoder
}

func newDecoder(body io.ReadCloser) *decoder {
	return &decoder{body: body, json: sigsjson.NewDecoderCaseSensitivePreserveInts(body)}
}

// event is a watch event as the apiserver writes it (metav1.WatchEvent), its object decoded.
type event struct {
	Type   watch.EventType        `json:"type"`
	Object map[string]interface{} `json:"object"`
}

// Decode returns the next event; io.EOF once the apiserver ends the stream.
func (d *decoder) Decode() (watch.EventType, runtime.Object, error) {
	var e event
	if err := d.json.Decode(&e); err != nil {
		return "", nil, err
	}
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
	default:
		return "", nil, fmt.Errorf("got invalid watch event type: %v", e.Type)
	}
	if e.Object == nil {
		return "", nil, fmt.Errorf("a watch event of type %s without an object", e.Type)
	}
	u := &unstructured.Unstructured{Object: e.Object}
	if u.GetKind() == "Status" && u.GetAPIVersion() == "v1" {
		// As client-go decodes it (an ERROR event's object): typed, for apierrors.FromObject.
		status := &metav1.Status{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(e.Object, status); err != nil {
			return "", nil, err
		}
		return e.Type, status, nil
	}
	return e.Type, u, nil
}

// Close closes the stream; a Decode under way returns an error.
func (d *decoder) Close() { _ = d.body.Close() }
