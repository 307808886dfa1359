// Package options holds the syncer's command-line flags: Options are parsed from flags, completed
// and validated, then turned into the plain Config the engine takes.
package options

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/legacyflags"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// Options are the syncer's flags. The first group keeps the names of the release-0.14 syncer.
type Options struct {
	FromKubeconfig string
	FromContext    string
	ToKubeconfig   string
	ToContext      string
	SyncTargetName string
	SyncTargetUID  string
	QPS            float32
	Burst          int
	// DownstreamQPS and DownstreamBurst are the client-side limit to the edge; QPS and Burst to the
	// upstream.
	DownstreamQPS   float32
	DownstreamBurst int

	Workers            int
	StatusWorkers      int
	UpsyncWorkers      int
	AdoptExisting      bool
	MetricsBindAddress string
	// MetricsSecure serves the metrics address over TLS to bearer tokens the edge apiserver
	// authenticates and authorizes (pkg/httpauth); MetricsCertDir holds its certificate.
	MetricsSecure  bool
	MetricsCertDir string
	// SignaturePolicy and SignatureKeys: what the edge requires of what it applies (pkg/signature).
	SignaturePolicy        string
	SignatureKeys          []string
	HealthProbeBindAddress string
	Profiling              bool
	HeartbeatPeriod        time.Duration
	HeartbeatRefresh       time.Duration
	// MemoryLimitRatio is the share of the container's memory limit given to the Go runtime as its
	// soft limit (unless GOMEMLIMIT is set); 0 leaves the runtime without one.
	MemoryLimitRatio float64

	// UpstreamTokenSecret is the Secret at the edge (namespace/name once completed) that renewed
	// upstream tokens are kept in; empty: the upstream token is not renewed.
	UpstreamTokenSecret string
	// Executor is the ServiceAccount at the edge (namespace/name once completed) the syncer writes as
	// on its mailboxes' behalf; empty: it writes as itself.
	Executor string

	LeaderElect                  bool
	LeaderElectResourceNamespace string
	LeaderElectResourceName      string
	// LeaderElectIdentity is this process's identity in the Lease, after its host name: $POD_UID in a
	// Pod, so that a restarted container of the same Pod leads at once; a random UID otherwise.
	LeaderElectIdentity      string
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration
	DiscoveryRefreshPeriod   time.Duration
	MaxNamespaceInformers    int
	// MaxObjectBytes is --max-object-bytes, a quantity ("1536Ki"); ObjectBytesLimit is its value;
	// MaxEdgeBytes --max-edge-bytes, EdgeBytesLimit its value.
	MaxObjectBytes, MaxEdgeBytes string
	// MaxObjectsPerResource is --max-objects-per-resource.
	MaxObjectsPerResource  int
	AuditPeriod            time.Duration
	ConflictRecheckPeriod  time.Duration
	EdgeWarnings           bool
	ReportOnly             bool
	DeletionBreakerCount   int
	DeletionBreakerPercent int
	// DeletionBreakerHourlyCount is the breaker's hourly limit; DeletionReleaseConfigMap the edge's
	// release object (namespace/name once completed; "" when none); MailboxReleasesDeletions lets the
	// mailbox release held deletions and opt entries out of the counting of emptying rewrites.
	DeletionBreakerHourlyCount int
	DeletionReleaseConfigMap   string
	MailboxReleasesDeletions   bool
	// ProtectedNamespaces are kept to the edge (nothing in them is upsynced): the cluster's own,
	// $POD_NAMESPACE, and those named (once completed); UpsyncSecrets lets Secrets be upsynced.
	ProtectedNamespaces []string
	UpsyncSecrets       bool
	// DrainQuietPeriod: how long a workspace's binding must stay gone before its objects go.
	DrainQuietPeriod time.Duration
	// RequireFence, with Executor, makes the syncer prove the edge owner's fence before it writes;
	// FenceAllow are what the fence lets it write by name (wellknown.FenceAllowNames).
	RequireFence bool
	FenceAllow   []string

	// APIExportEndpointSlice, when set, serves every workspace bound to an APIExport through its
	// virtual workspace (package mailboxes); --upstream-kubeconfig then points at the workspace that holds
	// the APIExportEndpointSlice of this name.
	APIExportEndpointSlice string

	// SyncerConfigSelector, when set, is a label selector: the syncer reads only the SyncerConfigs
	// and EdgeSyncConfigs it matches (several mailboxes in one upstream, a config each).
	SyncerConfigSelector string

	// PrintVersion is --version: print the build's version line and exit.
	PrintVersion bool

	// flags are the flags AddFlags added to (to tell which were given); legacyLogs checks the
	// release-0.14 klog flags given.
	flags      *pflag.FlagSet
	legacyLogs func() error

	// Logs is the logging configuration of Kubernetes components (k8s.io/component-base):
	// --logging-format, -v, --vmodule, --log-flush-frequency. main applies it, once, to klog.
	Logs *logsapi.LoggingConfiguration
}

// LoggingFormats are the values --logging-format takes: klog's text (the default) and JSON.
var LoggingFormats = []string{logsapi.DefaultLogFormat, logsapi.JSONLogFormat}

// logFlags names the flag behind each field of the logging configuration, for Validate's messages.
var logFlags = map[string]string{
	"format":                      "--logging-format",
	"verbosity":                   "-v",
	"vmodule":                     "--vmodule",
	"flushFrequency":              "--log-flush-frequency",
	"options.text.splitStream":    "--log-text-split-stream",
	"options.text.infoBufferSize": "--log-text-info-buffer-size",
	"options.json.splitStream":    "--log-json-split-stream",
	"options.json.infoBufferSize": "--log-json-info-buffer-size",
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		QPS:   500,
		Burst: 1000,
		// The edge is paced by its own API Priority and Fairness, as controller-runtime's clients
		// are since controller-runtime#3119 (2025), on SIG API Machinery's advice; the upstream is
		// shared by many edges, and a kcp server may not run priority and fairness.
		DownstreamQPS:          -1,
		DownstreamBurst:        1000,
		Workers:                16,
		StatusWorkers:          4,
		UpsyncWorkers:          4,
		MetricsBindAddress:     ":8080",
		SignaturePolicy:        "Off",
		HealthProbeBindAddress: ":8081",
		HeartbeatPeriod:        20 * time.Second,
		HeartbeatRefresh:       5 * time.Minute,
		MemoryLimitRatio:       0.9,

		// The leader renews every retry period (6 Lease updates a minute, not client-go's 30 at 2 s);
		// a standby takes over within a retry period of a release, a lease duration of a crash.
		LeaderElectLeaseDuration:   60 * time.Second,
		LeaderElectRenewDeadline:   40 * time.Second,
		LeaderElectRetryPeriod:     10 * time.Second,
		DiscoveryRefreshPeriod:     5 * time.Minute,
		MaxNamespaceInformers:      informermanager.DefaultMaxNamespaces,
		MaxObjectBytes:             DefaultMaxObjectBytes,
		MaxEdgeBytes:               DefaultMaxEdgeBytes,
		MaxObjectsPerResource:      DefaultMaxObjectsPerResource,
		AuditPeriod:                5 * time.Minute,
		ConflictRecheckPeriod:      time.Minute,
		EdgeWarnings:               true,
		DeletionBreakerCount:       50,
		DeletionBreakerPercent:     20,
		DeletionBreakerHourlyCount: 200,
		RequireFence:               true,
		DrainQuietPeriod:           time.Minute,
		DeletionReleaseConfigMap:   DefaultDeletionReleaseConfigMap,

		Logs: logsapi.NewLoggingConfiguration(),
	}
}

// AddFlags registers the flags, the logging flags of Kubernetes components among them
// (--logging-format, -v, --vmodule, --log-flush-frequency).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.FromKubeconfig, "upstream-kubeconfig", o.FromKubeconfig, "Kubeconfig of the upstream (mailbox workspace). Required (release-0.14: --from-kubeconfig).")
	fs.StringVar(&o.FromContext, "upstream-context", o.FromContext, "Context in --upstream-kubeconfig to use (default: its current context).")
	fs.StringVar(&o.ToKubeconfig, "downstream-kubeconfig", o.ToKubeconfig, "Kubeconfig of the downstream (edge cluster); empty means the in-cluster config (release-0.14: --to-kubeconfig).")
	fs.StringVar(&o.ToContext, "downstream-context", o.ToContext, "Context in --downstream-kubeconfig to use.")
	fs.StringVar(&o.SyncTargetName, "sync-target-name", o.SyncTargetName, "Name of the sync target; it identifies this syncer's objects downstream (label "+"edge.kubestellar.io/downsynced-by).")
	fs.StringVar(&o.SyncTargetUID, "sync-target-uid", o.SyncTargetUID, "UID of the sync target. Required.")
	fs.Float32Var(&o.QPS, "upstream-qps", o.QPS, "Client-side limit of requests per second to the upstream (mailbox workspace); negative: no client-side limit.")
	fs.IntVar(&o.Burst, "upstream-burst", o.Burst, "Client-side burst of requests to the upstream.")
	fs.Float32Var(&o.DownstreamQPS, "downstream-qps", o.DownstreamQPS, "Client-side limit of requests per second to the downstream (edge cluster); negative: no client-side limit, the edge's API Priority and Fairness paces the syncer.")
	fs.IntVar(&o.DownstreamBurst, "downstream-burst", o.DownstreamBurst, "Client-side burst of requests to the downstream, when --downstream-qps is positive.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Number of downsync workers.")
	fs.IntVar(&o.StatusWorkers, "status-workers", o.StatusWorkers, "Number of status-return workers.")
	fs.IntVar(&o.UpsyncWorkers, "upsync-workers", o.UpsyncWorkers, "Number of upsync workers.")
	fs.BoolVar(&o.AdoptExisting, "adopt-existing", o.AdoptExisting, "Take over downstream objects that exist without the syncer's mark (default: leave them alone and report a conflict).")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve the metrics address (/metrics, and /report and /debug/pprof when on) over HTTPS, only to requests whose bearer token the edge apiserver authenticates (TokenReview) and authorizes for the path (SubjectAccessReview: RBAC nonResourceURLs, verb get). The syncer's edge identity needs create on tokenreviews and subjectaccessreviews (the ClusterRole system:auth-delegator). syncer-gen's manifest and the chart turn it on.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "With --metrics-secure: the directory holding the metrics address's tls.crt and tls.key (read again when they change); empty: a self-signed certificate generated at start.")
	fs.StringVar(&o.SignaturePolicy, "signature-policy", o.SignaturePolicy, "What the edge requires of what the syncer applies there: Off; Warn (an object not signed by a key of --signature-keys is applied, with a Warning Event SignatureInvalid on it upstream); Enforce (it is not applied: the edge keeps the last verified version, and the Event and condition ObjectsSynced say why); Strict (Enforce, and a signature must name this sync target and a serial no lower than the one applied: kubectl kubestellar sign --targets --serial). Signed objects are applied as signed (kubectl kubestellar sign). Set at the edge only: the mailbox cannot change it.")
	fs.StringSliceVar(&o.SignatureKeys, "signature-keys", o.SignatureKeys, "Files or directories (a mounted Secret) of PEM ed25519 public keys (PKIX, as openssl pkey -pubout writes them) that signatures are verified with; several at once for a rotation; read again when they change. Required unless --signature-policy=Off.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz (live) and /readyz (synced and connected); \"0\" disables them.")
	fs.IntVar(&o.DeletionBreakerCount, "deletion-breaker-count", o.DeletionBreakerCount, "The deletion breaker: when more than this many deletions at the edge, and more than --deletion-breaker-percent of the objects the syncer owns there, fall due within a minute, every deletion is held (creates and updates go on) until released (condition DeletionsHeld on the SyncerConfigs says how). 0 disables it.")
	fs.IntVar(&o.DeletionBreakerHourlyCount, "deletion-breaker-hourly-count", o.DeletionBreakerHourlyCount, "The deletion breaker's hourly limit: when the deletions at the edge that fall due within an hour weigh more than this, and more than --deletion-breaker-percent of the objects the syncer owned there, every deletion is held, so that a slow drip trips it as a burst does. 0: no hourly limit.")
	fs.StringVar(&o.DeletionReleaseConfigMap, "deletion-release-configmap", o.DeletionReleaseConfigMap, "The edge's release object: a ConfigMap (name, in $POD_NAMESPACE, or namespace/name) whose annotation edge.kubestellar.io/release-deletions, written by the edge owner and naming at least the count held, releases the deletions the breaker holds. A ConfigMap the syncer wrote releases nothing. Empty: none.")
	fs.StringSliceVar(&o.ProtectedNamespaces, "protected-namespaces", o.ProtectedNamespaces, "More namespaces kept to the edge: nothing in them, nor the Namespaces themselves, is upsynced, whatever a SyncerConfig selects. $POD_NAMESPACE (the syncer's own: its credentials), kube-system, kube-node-lease and kube-public always are.")
	fs.BoolVar(&o.RequireFence, "require-fence", o.RequireFence, "With --executor: prove at start and with every heartbeat that the edge owner's fence holds the executor (a server-side dry run it must deny, in the executor's namespace), and write nothing at the edge while it does not (condition EdgeFence, metric kubestellar_syncer_fence_in_force). Off: the executor's rights alone bound the writes.")
	fs.StringSliceVar(&o.FenceAllow, "fence-allow", o.FenceAllow, "With --executor: the resources that act on the whole cluster (resource.group) the edge owner's fence lets the syncer write (syncer-gen's --fence-allow). The others are left out of the selection, said in SelectionValid when a SyncerConfig names them.")
	fs.DurationVar(&o.DrainQuietPeriod, "drain-quiet-period", o.DrainQuietPeriod, "With --apiexport-endpoint-slice: how long a workspace's APIBinding must stay gone before what the syncer wrote for it at the edge is deleted (through the deletion breaker), so that a binding deleted by mistake and made again deletes nothing.")
	fs.BoolVar(&o.UpsyncSecrets, "upsync-secrets", o.UpsyncSecrets, "Let SyncerConfigs upsync Secrets (never a ServiceAccount token's, nor any in a protected namespace). Off: a selected Secret stays at the edge, and ObjectsSynced says so.")
	fs.BoolVar(&o.MailboxReleasesDeletions, "mailbox-releases-deletions", o.MailboxReleasesDeletions, "Trust the mailbox with the deletion breaker: a SyncerConfig's annotation edge.kubestellar.io/release-deletions releases held deletions, and a downsync entry's allowEmptying exempts its objects' emptying rewrites from the count. Off: only the edge releases, and every emptying rewrite is counted.")
	fs.IntVar(&o.DeletionBreakerPercent, "deletion-breaker-percent", o.DeletionBreakerPercent, "The share of the objects the syncer owns at the edge, in percent, that the deletions due within a minute must also exceed for the deletion breaker to hold them (see --deletion-breaker-count).")
	fs.BoolVar(&o.ReportOnly, "report-only", o.ReportOnly, "Write nothing at the edge but server-side dry-runs: report what the syncer would create, update (with the fields that would change) and delete, in each SyncerConfig's status.syncTargets[].report (condition ReportOnly), in the log at level 0, and whole at /report on the metrics address. The safe first step when attaching an edge that already runs workloads (with --adopt-existing to see what taking them over would change). Status and upsync work as usual.")
	fs.BoolVar(&o.EdgeWarnings, "edge-warnings", o.EdgeWarnings, "Tell warnings at the edge about the objects the syncer wrote (Warning Events, and Pods' containers waiting to be pulled, crash-looping or OOM-killed, of the objects it wrote and of those they own) as Warning Events on their upstream objects, so that kubectl describe upstream shows why a workload does not run. Needs list and watch of events, pods and replicasets at the edge.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's /debug/pprof on the metrics address (heap?gc=1 collects first: what the benchmark reads).")
	fs.Float64Var(&o.MemoryLimitRatio, "memory-limit-ratio", o.MemoryLimitRatio, "Share of the container's memory limit (its cgroup's) that the Go runtime keeps to, collecting garbage harder as it nears it instead of being killed; ignored when $GOMEMLIMIT is set or there is no limit; 0 disables it.")
	fs.DurationVar(&o.HeartbeatPeriod, "heartbeat-period", o.HeartbeatPeriod, "How often the conditions are computed for every SyncerConfig's status, and written there when they changed; 0 disables the heartbeat.")
	fs.DurationVar(&o.HeartbeatRefresh, "heartbeat-refresh-period", o.HeartbeatRefresh, "How old the heartbeat on a SyncerConfig (status.lastSyncerHeartbeatTime) may grow while nothing else in its status changes: an idle syncer writes its status once per this period instead of once per --heartbeat-period. 0: every heartbeat writes.")
	fs.StringVar(&o.Executor, "executor", o.Executor, "Write at the edge, on the mailboxes' behalf, as this ServiceAccount (name, in $POD_NAMESPACE, or namespace/name), which the syncer impersonates: what it may write is then what the edge owner grants it, checked by the edge's apiserver (syncer-gen's fence). Reads, Events, the Lease and the token Secret stay the syncer's own. Empty: the syncer writes as itself.")
	fs.StringVar(&o.UpstreamTokenSecret, "upstream-token-secret", o.UpstreamTokenSecret, "Renew the upstream ServiceAccount token when half its life has gone (TokenRequest on its own ServiceAccount: syncer-gen grants it), and keep each renewed token in this Secret at the edge (name, in $POD_NAMESPACE, or namespace/name), which a restarted syncer starts from. syncer-gen's manifest and the chart create it empty. Empty: the token is used as it is until it expires.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run only while holding a Lease in the edge cluster, so that several replicas are safe; only the leader watches and writes.")
	fs.StringVar(&o.LeaderElectResourceNamespace, "leader-elect-resource-namespace", o.LeaderElectResourceNamespace, "Namespace of the Lease at the edge (default: $POD_NAMESPACE).")
	fs.StringVar(&o.LeaderElectResourceName, "leader-elect-resource-name", o.LeaderElectResourceName, "Name of the Lease (default: kubestellar-syncer-<sync target name>).")
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", o.LeaderElectLeaseDuration, "How long a standby waits after the last renewal before taking over.")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", o.LeaderElectRenewDeadline, "How long the leader keeps trying to renew before it gives up (and exits).")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", o.LeaderElectRetryPeriod, "How often candidates try to acquire or renew the Lease.")
	fs.DurationVar(&o.DiscoveryRefreshPeriod, "discovery-refresh-period", o.DiscoveryRefreshPeriod, "How often discovery is re-read as a safety net for APIs that appear without a CRD; 0 disables it.")
	fs.DurationVar(&o.AuditPeriod, "audit-period", o.AuditPeriod, "How often the syncer looks in its caches for objects it should have deleted and has not (an edge copy whose upstream object is gone, an upstream copy whose edge object is gone); one found twice in a row is logged, counted in kubestellar_syncer_orphans_found_total and processed again. 0 disables it.")
	fs.StringVar(&o.MaxEdgeBytes, "max-edge-bytes", o.MaxEdgeBytes, "What a mailbox may make the edge store through the syncer: the syncer's copies there in all, as written (JSON; copies kept after their upstream object went included), a quantity (1Gi, 512Mi). A write that would pass it is held (the edge keeps what it has) and said upstream: a Warning Event EdgeStorageFull, ObjectsSynced False; a write that does not grow a copy always goes. 0: no limit. In many-mailboxes mode, per workspace.")
	fs.StringVar(&o.MaxObjectBytes, "max-object-bytes", o.MaxObjectBytes, "The largest upstream object the syncer holds and syncs, as its JSON (a quantity: 1536Ki, 64Ki). A larger one is held as its metadata only, not written at the edge (which keeps the version it has) and said upstream: a Warning Event ObjectTooLarge, ObjectsSynced False. 0: no limit. The default is the largest object an etcd-backed apiserver stores by default.")
	fs.IntVar(&o.MaxObjectsPerResource, "max-objects-per-resource", o.MaxObjectsPerResource, "How many objects of one upstream resource, in the namespaces selected, the syncer holds and syncs. Past it the resource is held: its informer stops, nothing more of it is written at the edge (which keeps what it has), and SelectionValid says so (TooManyObjects) until the objects are that many or fewer again (counted at each config change and every --discovery-refresh-period). 0: no limit. Not applied with --apiexport-endpoint-slice.")
	fs.IntVar(&o.MaxNamespaceInformers, "max-namespace-informers", o.MaxNamespaceInformers, "How many namespaces a resource may be selected in and still be listed and watched upstream one namespace at a time; past it, the syncer lists and watches it cluster-wide (keeping only those namespaces' objects) where it may, as a SelfSubjectAccessReview tells, and namespace by namespace otherwise.")
	fs.DurationVar(&o.ConflictRecheckPeriod, "conflict-recheck-period", o.ConflictRecheckPeriod, "How often an object blocked by an object the syncer does not own (downstream, or upstream for upsync) is looked at again.")
	fs.StringVar(&o.APIExportEndpointSlice, "apiexport-endpoint-slice", o.APIExportEndpointSlice, "Serve every kcp workspace bound to an APIExport, through its virtual workspace: the name of its APIExportEndpointSlice, in the workspace --upstream-kubeconfig points at. Each workspace's namespaces land at the edge in namespaces of their own (<namespace>-<10 hex digits>). Empty: one mailbox workspace, the one --upstream-kubeconfig points at.")
	fs.StringVar(&o.SyncerConfigSelector, "syncer-config-selector", o.SyncerConfigSelector, "Label selector of the SyncerConfigs (and EdgeSyncConfigs) this syncer reads, merges and writes its heartbeat on, e.g. edge.kubestellar.io/sync-target=edge-1; empty: all of them. Lets several syncers share one upstream, a config each.")
	fs.BoolVar(&o.PrintVersion, "version", o.PrintVersion, "Print the version, git revision, Go version and platform, and exit.")

	addAliases(fs)

	logsapi.AddFlags(o.Logs, fs)
	o.legacyLogs = legacyflags.Klog(fs) // release-0.14's klog flags, after -v and --vmodule
	o.flags = fs
	fs.Lookup("logging-format").Usage = "Log format: text (klog's, the default) or json (one JSON object per line)."
	fs.Lookup("v").Usage = "Log verbosity: 0 lifecycle and problems, 2 each change applied, 4 skips and why, 5 enqueues and heartbeats, 6 and up client-go's requests."
	// The alpha options need the LoggingAlphaOptions feature gate, which the syncer does not offer:
	// accepted (and refused by Validate), but not shown.
	for _, name := range []string{"log-text-split-stream", "log-text-info-buffer-size", "log-json-split-stream", "log-json-info-buffer-size"} {
		_ = fs.MarkHidden(name)
	}
}

// addAliases adds the names flags had before they were named as Kubernetes components name them:
// still accepted (bound to the same options), with a deprecation line on standard error, and hidden
// from --help. And release-0.14's names of the two sides (from: upstream, to: downstream); its --qps
// and --burst given without --downstream-qps limit both sides, as they did there (Complete).
func addAliases(fs *pflag.FlagSet) {
	for _, alias := range []struct{ old, current, note string }{
		{"leader-elect-namespace", "leader-elect-resource-namespace", ""},
		{"leader-elect-lease-name", "leader-elect-resource-name", ""},
		{"from-kubeconfig", "upstream-kubeconfig", ""},
		{"from-context", "upstream-context", ""},
		{"to-kubeconfig", "downstream-kubeconfig", ""},
		{"to-context", "downstream-context", ""},
		{"qps", "upstream-qps", " (given without --downstream-qps, --qps limits the downstream too, as in release-0.14)"},
		{"burst", "upstream-burst", " (with --qps and without --downstream-qps, --burst applies to the downstream too, as in release-0.14)"},
	} {
		f := fs.Lookup(alias.current)
		fs.Var(f.Value, alias.old, f.Usage)
		_ = fs.MarkDeprecated(alias.old, "use --"+alias.current+" instead"+alias.note)
	}
}

// Complete fills in what follows from other flags.
func (o *Options) Complete() error {
	if o.flags != nil && o.flags.Changed("qps") && !o.flags.Changed("downstream-qps") {
		// As release-0.14's --qps and --burst (deprecated aliases of --upstream-qps and --upstream-burst):
		// given alone, they limit the edge too.
		o.DownstreamQPS = o.QPS
		if !o.flags.Changed("downstream-burst") {
			o.DownstreamBurst = o.Burst
		}
	}
	if o.LeaderElectResourceNamespace == "" {
		o.LeaderElectResourceNamespace = os.Getenv("POD_NAMESPACE")
	}
	for _, name := range []*string{&o.UpstreamTokenSecret, &o.Executor, &o.DeletionReleaseConfigMap} {
		if *name != "" && !strings.Contains(*name, "/") && os.Getenv("POD_NAMESPACE") != "" {
			*name = os.Getenv("POD_NAMESPACE") + "/" + *name
		}
	}
	o.ProtectedNamespaces = append(append([]string{"kube-node-lease", "kube-public", "kube-system"}, o.ProtectedNamespaces...), os.Getenv("POD_NAMESPACE"))
	slices.Sort(o.ProtectedNamespaces)
	o.ProtectedNamespaces = slices.DeleteFunc(slices.Compact(o.ProtectedNamespaces), func(ns string) bool { return ns == "" })
	if o.DeletionReleaseConfigMap == DefaultDeletionReleaseConfigMap {
		o.DeletionReleaseConfigMap = "" // the default outside a Pod: no namespace to look in
	}
	if o.LeaderElectResourceName == "" {
		o.LeaderElectResourceName = "kubestellar-syncer-" + mapping.OwnerLabelValue(o.SyncTargetName)
	}
	if o.LeaderElectIdentity == "" {
		// One Pod runs one syncer container at a time: its next run may take its Lease over at once
		// instead of waiting a lease duration for itself. Outside a Pod every process is another.
		if o.LeaderElectIdentity = os.Getenv("POD_UID"); o.LeaderElectIdentity == "" {
			o.LeaderElectIdentity = string(uuid.NewUUID())
		}
	}
	return nil
}

// RESTConfigs loads the two kubeconfigs. Errors name the flag and the file, in one line.
func (o *Options) RESTConfigs() (upstream, downstream *rest.Config, err error) {
	upstream, err = load(o.FromKubeconfig, o.FromContext)
	if err != nil {
		return nil, nil, fmt.Errorf("--upstream-kubeconfig %s: %w", o.FromKubeconfig, err)
	}
	if o.ToKubeconfig == "" {
		downstream, err = rest.InClusterConfig()
		if err != nil {
			return nil, nil, fmt.Errorf("--downstream-kubeconfig is empty and the in-cluster config is not usable: %w", err)
		}
	} else if downstream, err = load(o.ToKubeconfig, o.ToContext); err != nil {
		return nil, nil, fmt.Errorf("--downstream-kubeconfig %s: %w", o.ToKubeconfig, err)
	}
	upstream.QPS, upstream.Burst = o.QPS, o.Burst
	downstream.QPS, downstream.Burst = o.DownstreamQPS, o.DownstreamBurst
	for _, c := range []*rest.Config{upstream, downstream} {
		c.UserAgent = "kubestellar-syncer/" + o.SyncTargetName
	}
	return upstream, downstream, nil
}

func load(path, context string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// DefaultDeletionReleaseConfigMap is --deletion-release-configmap's default, in $POD_NAMESPACE: the
// release object syncer-gen's manifest and the chart make empty beside the syncer.
const DefaultDeletionReleaseConfigMap = "kubestellar-syncer-release"
