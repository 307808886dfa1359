package syncer

import (
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// DefaultFieldManager is the server-side apply field manager of the syncer's writes.
const DefaultFieldManager = framework.DefaultFieldManager

// Config is everything the engine needs; cmd/syncer builds it from flags, tests build it directly.
type Config struct {
	// UpstreamDynamic and UpstreamDiscovery talk to the mailbox workspace.
	UpstreamDynamic   dynamic.Interface
	UpstreamDiscovery discovery.DiscoveryInterface
	// DownstreamDynamic and DownstreamDiscovery talk to the edge cluster.
	DownstreamDynamic   dynamic.Interface
	DownstreamDiscovery discovery.DiscoveryInterface

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
	// ConflictRecheckPeriod is how often an object blocked by an unowned object is looked at again.
	ConflictRecheckPeriod time.Duration

	// Metrics receives the engine's metrics; required.
	Metrics *metrics.Metrics
	// Recorder, if set, records Events on upstream objects: conflicts with objects the syncer does
	// not own, and writes refused for good (invalid, forbidden, ...).
	Recorder record.EventRecorder
	// HeartbeatPeriod is how often the syncer writes its heartbeat and conditions on every
	// SyncerConfig's status; 0 disables it.
	HeartbeatPeriod time.Duration
}
