package options

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/kubestellar/syncer/pkg/signature"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// Validate reports every flag error at once.
func (o *Options) Validate() error {
	var errs []string
	if o.FromKubeconfig == "" {
		errs = append(errs, "--upstream-kubeconfig is required")
	}
	if o.legacyLogs != nil {
		if err := o.legacyLogs(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if o.SyncTargetUID == "" {
		errs = append(errs, "--sync-target-uid is required")
	}
	if o.MetricsCertDir != "" && !o.MetricsSecure {
		errs = append(errs, "--metrics-cert-dir needs --metrics-secure")
	}
	if p, err := signature.ParsePolicy(o.SignaturePolicy); err != nil {
		errs = append(errs, "--signature-policy: "+err.Error())
	} else if p != signature.Off && len(o.SignatureKeys) == 0 {
		errs = append(errs, "--signature-policy="+string(p)+" needs --signature-keys")
	}
	if o.QPS == 0 || (o.QPS > 0 && o.Burst <= 0) {
		errs = append(errs, "--upstream-qps (--qps) must be positive (or negative: no client-side limit) and --upstream-burst (--burst) positive")
	}
	if o.DownstreamQPS == 0 || (o.DownstreamQPS > 0 && o.DownstreamBurst <= 0) {
		errs = append(errs, "--downstream-qps must be positive (or negative: no client-side limit) and --downstream-burst positive")
	}
	for _, f := range [][2]string{{"upstream-token-secret", o.UpstreamTokenSecret}, {"executor", o.Executor}, {"deletion-release-configmap", o.DeletionReleaseConfigMap}} {
		flag, value := f[0], f[1]
		if ns, name, ok := strings.Cut(value, "/"); value != "" && value != DefaultDeletionReleaseConfigMap && (!ok || ns == "" || name == "" || strings.Contains(name, "/")) {
			errs = append(errs, "--"+flag+" needs a namespace: namespace/name, or a name with $POD_NAMESPACE set")
		}
	}
	if err := wellknown.CheckFenceAllow(o.FenceAllow); err != nil {
		errs = append(errs, "--fence-allow: "+err.Error())
	}
	if o.MaxObjectsPerResource < 0 {
		errs = append(errs, fmt.Sprintf("--max-objects-per-resource %d: want a number of objects, or 0 for no limit", o.MaxObjectsPerResource))
	}
	if _, err := o.ObjectBytesLimit(); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := o.EdgeBytesLimit(); err != nil {
		errs = append(errs, err.Error())
	}
	errs = append(errs, o.validateLimits()...)
	if _, err := labels.Parse(o.SyncerConfigSelector); err != nil {
		errs = append(errs, fmt.Sprintf("--syncer-config-selector: %v", err))
	}
	errs = append(errs, o.validateLogs()...)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// validateLimits checks the numbers the flags set: leader election's timings, workers, periods and
// limits.
func (o *Options) validateLimits() []string {
	var errs []string
	if o.LeaderElect {
		if o.LeaderElectResourceNamespace == "" {
			errs = append(errs, "--leader-elect needs --leader-elect-resource-namespace (or $POD_NAMESPACE)")
		}
		if !(o.LeaderElectRetryPeriod > 0 && o.LeaderElectRetryPeriod < o.LeaderElectRenewDeadline && o.LeaderElectRenewDeadline < o.LeaderElectLeaseDuration) {
			errs = append(errs, "leader election timings must satisfy 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration")
		}
	}
	for _, w := range []struct {
		flag string
		n    int
	}{{"--workers", o.Workers}, {"--status-workers", o.StatusWorkers}, {"--upsync-workers", o.UpsyncWorkers}} {
		if w.n < 1 {
			errs = append(errs, fmt.Sprintf("%s must be at least 1 (got %d)", w.flag, w.n))
		}
	}
	if o.MemoryLimitRatio < 0 || o.MemoryLimitRatio > 1 {
		errs = append(errs, fmt.Sprintf("--memory-limit-ratio must be between 0 and 1 (got %v)", o.MemoryLimitRatio))
	}
	if o.DeletionBreakerCount < 0 || o.DeletionBreakerHourlyCount < 0 || o.DeletionBreakerPercent < 0 || o.DeletionBreakerPercent > 100 {
		errs = append(errs, "--deletion-breaker-count and --deletion-breaker-hourly-count must not be negative, --deletion-breaker-percent must be between 0 and 100")
	}
	if o.AuditPeriod < 0 {
		errs = append(errs, "--audit-period must not be negative")
	}
	if o.MaxNamespaceInformers < 1 {
		errs = append(errs, fmt.Sprintf("--max-namespace-informers must be at least 1 (got %d)", o.MaxNamespaceInformers))
	}
	if o.HeartbeatRefresh < 0 {
		errs = append(errs, "--heartbeat-refresh-period must not be negative")
	}
	if o.HeartbeatPeriod < 0 {
		errs = append(errs, "--heartbeat-period must not be negative")
	}
	return errs
}

// validateLogs checks the logging configuration as component-base will when main applies it, and
// words each problem with the flag that caused it.
func (o *Options) validateLogs() []string {
	var errs []string
	known := slices.Contains(LoggingFormats, o.Logs.Format)
	if !known {
		errs = append(errs, fmt.Sprintf("--logging-format must be one of %s (got %q)", strings.Join(LoggingFormats, ", "), o.Logs.Format))
	}
	for _, e := range logsapi.Validate(o.Logs, nil, nil) {
		if !known && e.Field == "format" {
			continue // said above
		}
		name := e.Field
		for field, flag := range logFlags {
			if e.Field == field || strings.HasPrefix(e.Field, field+"[") {
				name = flag
			}
		}
		detail := e.Detail
		if detail == "" {
			detail = e.ErrorBody()
		}
		errs = append(errs, name+": "+detail)
	}
	return errs
}

// DefaultMaxObjectsPerResource is --max-objects-per-resource's default: the most objects the syncer's
// memory was measured with (docs/performance.md), about 800 MB of them.
const DefaultMaxObjectsPerResource = 100000

// DefaultMaxObjectBytes is --max-object-bytes' default: etcd's default request limit.
const DefaultMaxObjectBytes = "1536Ki"

// DefaultMaxEdgeBytes is --max-edge-bytes' default: half of etcd's default storage quota.
const DefaultMaxEdgeBytes = "1Gi"

// ObjectBytesLimit is --max-object-bytes in bytes (0: no limit).
func (o *Options) ObjectBytesLimit() (int, error) {
	n, err := bytesLimit("max-object-bytes", o.MaxObjectBytes, math.MaxInt32, "1536Ki or 64Ki")
	return int(n), err
}

// EdgeBytesLimit is --max-edge-bytes in bytes (0: no limit).
func (o *Options) EdgeBytesLimit() (int64, error) {
	return bytesLimit("max-edge-bytes", o.MaxEdgeBytes, math.MaxInt64, "1Gi or 512Mi")
}

// bytesLimit is a size flag's value in bytes, at most max.
func bytesLimit(flag, value string, max int64, examples string) (int64, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil || q.Sign() < 0 || !q.IsZero() && q.Value() > max {
		return 0, fmt.Errorf("--%s %q: want a size such as %s, or 0 for no limit", flag, value, examples)
	}
	return q.Value(), nil
}
