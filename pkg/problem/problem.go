package problem

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind says what sort of problem it is. Kinds are a closed set.
type Kind string

// Kinds of problems in the selection (found when the SyncerConfigs are resolved against discovery).
const (
	// InvalidConfig is a SyncerConfig, or an entry of one, that cannot be read.
	InvalidConfig Kind = "InvalidConfig"
	// UnknownResource is a resource a config names that the side it is read from does not serve.
	UnknownResource Kind = "UnknownResource"
	// WrongScope is a namespaced resource listed as cluster-scoped, or the other way round.
	WrongScope Kind = "WrongScope"
	// NotSyncable is a resource without the verbs the syncer needs (list, watch, get, create, ...).
	NotSyncable Kind = "NotSyncable"
	// NotServedDownstream is a selected resource the edge does not serve (yet), or not at the
	// version upstream serves; its objects wait.
	NotServedDownstream Kind = "NotServedDownstream"
	// NotServedUpstream is an upsync resource the upstream does not serve; its objects are not upsynced.
	NotServedUpstream Kind = "NotServedUpstream"
	// Unsupported is a request the syncer does not carry out (upsyncing CRDs, say).
	Unsupported Kind = "Unsupported"
	// AccessDenied is a selected resource the syncer may not list or watch on one side.
	AccessDenied Kind = "AccessDenied"
	// OutsideFence is a selected resource the syncer does not write at the edge while it writes
	// through an executor (--executor): no fence can hold it.
	OutsideFence Kind = "OutsideFence"
	// TooManyObjects is a selected resource with more objects upstream than the syncer holds
	// (--max-objects-per-resource): it is not synced, and the edge keeps what it has.
	TooManyObjects Kind = "TooManyObjects"
)

// Kinds of warnings: nothing is broken, but the user likely meant something else. They show in the
// conditions without turning Ready False.
const (
	// EmptyConfig is a SyncerConfig that selects nothing.
	EmptyConfig Kind = "EmptyConfig"
	// EmptyEntry is an entry of a config that selects nothing (an EdgeSyncConfig entry without a name).
	EmptyEntry Kind = "EmptyEntry"
	// VersionFallback is a resource whose requested version is not served; another one is used.
	VersionFallback Kind = "VersionFallback"
	// NamespaceMissing is a namespace a config lists that does not exist upstream.
	NamespaceMissing Kind = "NamespaceMissing"
	// NamespaceTerminating is a namespace at the edge whose deletion holds up objects that wait for it.
	NamespaceTerminating Kind = "NamespaceTerminating"
)

// Warning tells whether the problem is only a warning: nothing is broken.
func (p Problem) Warning() bool {
	switch p.Kind {
	case EmptyConfig, EmptyEntry, VersionFallback, NamespaceMissing, NamespaceTerminating:
		return true
	}
	return false
}

// Kinds of problems with objects (found by the controllers).
const (
	// Conflict is an object the syncer would write that exists without its mark.
	Conflict Kind = "Conflict"
	// SyncFailed is an object whose last sync attempt failed; it is retried with backoff.
	SyncFailed Kind = "SyncFailed"
	// WriteLoop is an object another actor keeps reverting or deleting; the syncer backs off.
	WriteLoop Kind = "WriteLoop"
)

// Kinds of configs a problem can come from.
const (
	SyncerConfig   = "SyncerConfig"
	EdgeSyncConfig = "EdgeSyncConfig"
)

// Problem is one problem.
type Problem struct {
	Kind Kind
	// ConfigKind is the kind of the config named by Config: EdgeSyncConfig, or SyncerConfig (also
	// when empty).
	ConfigKind string
	// Config names the config the problem comes from; empty when it concerns every config.
	Config string
	// Field is where in the config, e.g. "namespaceScope.resources[0]".
	Field string
	// Resource is the resource concerned, if any.
	Resource schema.GroupResource
	// Object is "namespace/name" (or "name") of the object concerned, if any.
	Object string
	// Reason says what is wrong, in words for a user; it does not repeat the fields above.
	Reason string
}

// String renders the problem for a person: where it is, then why.
func (p Problem) String() string {
	var b strings.Builder
	if p.Config != "" {
		fmt.Fprintf(&b, "%s %s", configKind(p.ConfigKind), p.Config)
		if p.Field != "" {
			b.WriteString(": " + p.Field)
		}
		b.WriteString(": ")
	} else if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	if p.Object != "" {
		b.WriteString(ResourceString(p.Resource) + " " + p.Object + ": ")
	}
	b.WriteString(p.Reason)
	return b.String()
}

// Concerns tells whether the problem is to be shown on the config of that kind and name: it comes
// from that config, or from none in particular.
func (p Problem) Concerns(kind, config string) bool {
	return p.Config == "" || (p.Config == config && configKind(p.ConfigKind) == configKind(kind))
}

// configKind is the kind of a config, SyncerConfig when unsaid.
func configKind(kind string) string {
	if kind == "" {
		return SyncerConfig
	}
	return kind
}

// ResourceString names a resource as kubectl does: "configmaps", "deployments.apps".
func ResourceString(gr schema.GroupResource) string { return gr.String() }

// Strings renders problems, one string each.
func Strings(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// ConfigKeysAndValues are the structured-log key and value that name a config of the kind:
// syncerConfig=<name> (as every log line named SyncerConfigs before EdgeSyncConfigs were read), or
// edgeSyncConfig=<name>; the keys are constants.
func ConfigKeysAndValues(kind, name string) []interface{} {
	if configKind(kind) == EdgeSyncConfig {
		return []interface{}{"edgeSyncConfig", name}
	}
	return []interface{}{"syncerConfig", name}
}
