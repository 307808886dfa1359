package syncer

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/breaker"
	"github.com/kubestellar/syncer/pkg/credential"
	"github.com/kubestellar/syncer/pkg/downsync"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/metrics"
	"github.com/kubestellar/syncer/pkg/reachability"
	"github.com/kubestellar/syncer/pkg/report"
)

// DefaultFieldManager is the server-side apply field manager of the syncer's writes.
const DefaultFieldManager = framework.DefaultFieldManager

// Config is everything the engine needs; cmd/syncer builds it from flags, tests build it directly.
type Config struct {
	// UpstreamDynamic and UpstreamDiscovery talk to the mailbox workspace.
	UpstreamDynamic dynamic.Interface
	// UpstreamDiscovery and DownstreamDiscovery are each side's cached discovery (NewDiscovery). The
	// engine invalidates them when an API may have changed (a CRD or an APIBinding event,
	// DiscoveryRefreshPeriod); engines that share them walk once per change.
	UpstreamDiscovery *Discovery
	// DownstreamDynamic and DownstreamDiscovery talk to the edge cluster.
	DownstreamDynamic   dynamic.Interface
	DownstreamDiscovery *Discovery
	// DownstreamWrites, if set, makes the writes at the edge on the mailbox's behalf (downsync's)
	// instead of DownstreamDynamic: a client acting as an executor the edge owner bounds (--executor).
	// The engine then never selects what no such bound can hold (wellknown.AdmissionPolicy).
	DownstreamWrites dynamic.Interface
	// FenceNamespace, with FenceWrites, is the executor's namespace, which the edge owner's fence
	// keeps it out of: the syncer proves the fence there (a dry run it must deny) at start and with
	// every heartbeat, and writes nothing at the edge while it is not proven. FenceWrites is the
	// executor's client as the edge sees it (DownstreamWrites may map namespaces, serving several
	// mailboxes).
	FenceNamespace string
	FenceWrites    dynamic.Interface
	// FenceAllow are the resources that act on the whole cluster (wellknown.Fenced) the edge owner's
	// fence lets the executor write; the others are left out of the selection.
	FenceAllow []string

	// SyncTargetName identifies the syncer; it becomes the value of the owner label downstream.
	SyncTargetName string
	// Workers is the number of downsync workers.
	Workers int
	// StatusWorkers and UpsyncWorkers are the numbers of status-return and upsync workers.
	StatusWorkers int
	UpsyncWorkers int
	// AdoptExisting lets the syncer take over downstream objects that exist without its mark.
	AdoptExisting bool
	// FieldManager is the server-side apply field manager (DefaultFieldManager when empty).
	FieldManager string
	// DiscoveryRefreshPeriod re-reads discovery as a safety net for APIs that appear without a CRD
	// event (aggregated APIs, kcp APIBindings); 0 disables it.
	DiscoveryRefreshPeriod time.Duration
	// AuditPeriod is how often the audit looks for objects the syncer should have deleted and has not
	// (runAudit); 0 disables it.
	AuditPeriod time.Duration
	// MaxObjectBytes, when positive, is the largest upstream object the syncer holds and syncs: a
	// larger one is held as its metadata only, not written, and said upstream (--max-object-bytes).
	MaxObjectBytes int
	// MaxEdgeBytes, when positive, bounds what the syncer's copies at the edge hold in all: a write
	// past it is held, and said upstream (--max-edge-bytes).
	MaxEdgeBytes int64
	// MaxObjectsPerResource, when positive, is how many objects of one upstream resource (in the
	// namespaces selected) the syncer holds and syncs: past it the resource is held, not synced, and
	// said upstream (--max-objects-per-resource). Not applied with an UpstreamSource.
	MaxObjectsPerResource int
	// MaxNamespaceInformers is how many namespaces a resource may be selected in and still be watched
	// upstream namespace by namespace; past it, where the syncer may list and watch it cluster-wide
	// (a SelfSubjectAccessReview says), one whole-cluster list and watch filtered to those namespaces.
	// Zero: informermanager.DefaultMaxNamespaces.
	MaxNamespaceInformers int
	// ConfigSelector, if set, is a label selector: the engine reads only the SyncerConfigs and
	// EdgeSyncConfigs it matches (and writes its heartbeat on those only).
	ConfigSelector string
	// EdgeWarnings tells warnings at the edge about the objects the syncer wrote as Events on their
	// upstream objects (package warnings); it needs the Recorder.
	EdgeWarnings bool
	// EdgeRecorder, if set, records Events on edge copies for the technician at the site (a pause set
	// upstream, a drift held).
	EdgeRecorder record.EventRecorder
	// Signatures, if set, is what downsync verifies every upstream object with before writing it
	// (signature.Trust: the keys and policy held at the edge).
	Signatures downsync.Signatures
	// ReportOnly writes nothing at the edge but server-side dry-runs: what would be written is
	// reported (Report, the SyncerConfigs' status, the log).
	ReportOnly bool
	// Report receives what report-only mode would write (a new one when nil).
	Report *report.Store
	// DeletionBreaker limits the deletions at the edge that may fall due at once (package breaker);
	// Count 0 disables it.
	DeletionBreaker breaker.Options
	// DeletionRelease is the edge's release object: a ConfigMap whose annotation
	// edge.kubestellar.io/release-deletions, set by the edge owner, releases the deletions held.
	// Empty: none.
	DeletionRelease types.NamespacedName
	// MailboxReleasesDeletions lets the mailbox release held deletions (the annotation on a
	// SyncerConfig) and opt entries out of the counting of rewrites that empty objects
	// (allowEmptying): the site trusts its mailbox with its breaker.
	MailboxReleasesDeletions bool
	// ProtectedNamespaces are kept to the edge: nothing in them is upsynced, nor are they.
	ProtectedNamespaces []string
	// UpsyncSecrets lets Secrets be upsynced (never a ServiceAccount token's): the edge owner's choice.
	UpsyncSecrets bool
	// ConflictRecheckPeriod is how often an object blocked by an unowned object is looked at again.
	ConflictRecheckPeriod time.Duration
	// Clock is the time the per-object policies of all three directions read (pauses), time.Now when
	// nil.
	Clock func() time.Time

	// Metrics receives the engine's metrics; required.
	Metrics *metrics.Metrics
	// Recorder, if set, records Events on upstream objects: conflicts with objects the syncer does
	// not own, and writes refused for good (invalid, forbidden, ...).
	Recorder record.EventRecorder
	// UpstreamSource and DownstreamSource, when set, give the engine shares of informers run for
	// several engines (one syncer serving several workspaces, package mailboxes) instead of informers
	// of its own. With an UpstreamSource the engine watches no CRDs upstream: the workspaces are
	// reached through an APIExport's virtual workspace, where APIs come from bindings only.
	UpstreamSource, DownstreamSource informermanager.Source
	// Cluster is the logical cluster of the workspace this engine serves when the syncer serves
	// several; it is recorded on every downstream object (mapping.ClusterAnnotation). Empty for one.
	Cluster string
	// Reachability tells whether each side answers, and whom to tell when that changes (the engine
	// probes a side that went, and retries what failed once it is back); nil: always reachable.
	Reachability *reachability.Tracker
	// Credential tells how the upstream credential fares (condition UpstreamCredential); nil: none
	// shown.
	Credential interface{ State() credential.State }
	// Embedded engines (one of several in a process) leave the process-wide metrics (informer
	// gauges, objects_managed) to whoever runs them; see ObjectCounts.
	Embedded bool
	// DownstreamOwned, if set, tells the resources at the edge that held objects of this engine when
	// it started, instead of the engine's own scan (one LIST per edge resource): one syncer serving
	// several workspaces scans once for all of them.
	DownstreamOwned func() map[schema.GroupResource]schema.GroupVersionResource
	// OnResolved, if set, is called after every resolve of the selection.
	OnResolved func()

	// HeartbeatPeriod is how often the syncer writes its heartbeat and conditions on every
	// SyncerConfig's status; 0 disables it.
	HeartbeatPeriod time.Duration
	// HeartbeatRefresh is how old the heartbeat may grow while the status does not change
	// (conditions.Config.Refresh).
	HeartbeatRefresh time.Duration
}
