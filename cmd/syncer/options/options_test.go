package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestValidateWorkers: a worker count below 1 is refused by Validate with a message naming the flag
// and the value (Complete no longer turns it into 1 behind the operator's back); the defaults and 1
// pass.
func TestValidateWorkers(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for none
	}{
		{args: nil},
		{args: []string{"--workers=1", "--status-workers=1", "--upsync-workers=1"}},
		{args: []string{"--workers=0"}, wantErr: "--workers must be at least 1 (got 0)"},
		{args: []string{"--status-workers=0"}, wantErr: "--status-workers must be at least 1 (got 0)"},
		{args: []string{"--upsync-workers=-2"}, wantErr: "--upsync-workers must be at least 1 (got -2)"},
		{args: []string{"--workers=0", "--upsync-workers=0"}, wantErr: "--workers must be at least 1 (got 0); --upsync-workers must be at least 1 (got 0)"},
		{args: []string{"--syncer-config-selector=edge.kubestellar.io/sync-target=edge-1"}},
		{args: []string{"--downstream-qps=100", "--downstream-burst=200", "--upstream-qps=-1"}},
		{args: []string{"--downstream-qps=0"}, wantErr: "--downstream-qps must be positive (or negative: no client-side limit) and --downstream-burst positive"},
		{args: []string{"--downstream-qps=50", "--downstream-burst=0"}, wantErr: "--downstream-qps must be positive (or negative: no client-side limit) and --downstream-burst positive"},
		{args: []string{"--syncer-config-selector=a in (b"}, wantErr: "--syncer-config-selector: unable to parse requirement: found '', expected: ',' or ')'"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--upstream-kubeconfig=k", "--sync-target-uid=u"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
		}
		if tc.wantErr != "" && strings.Contains(tc.args[0], "--workers=0") && o.Workers != 0 {
			t.Errorf("%v: Complete changed --workers to %d", tc.args, o.Workers)
		}
	}
}

// TestValidateLogging: the logging flags are those of Kubernetes components; Validate refuses an
// unknown --logging-format, naming the flag, the value and the formats there are, and the
// combinations component-base refuses, naming their flags.
func TestValidateLogging(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for none
	}{
		{args: nil},
		{args: []string{"--logging-format=text", "-v=4", "--vmodule=process=5"}},
		{args: []string{"--logging-format=json", "-v=9"}},
		{args: []string{"--logging-format=bogus"}, wantErr: `--logging-format must be one of text, json (got "bogus")`},
		{args: []string{"--logging-format=json", "--vmodule=process=5"}, wantErr: "--vmodule: Only supported for text log format"},
		{args: []string{"--log-json-split-stream"}, wantErr: "--log-json-split-stream: Feature LoggingAlphaOptions is disabled"},
		{args: []string{"--log-flush-frequency=0", "--workers=0"}, wantErr: "--workers must be at least 1 (got 0); --log-flush-frequency: Must be greater than zero"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--upstream-kubeconfig=k", "--sync-target-uid=u"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}

// TestRESTConfigsLimits: the upstream client keeps --upstream-qps and --upstream-burst (500 and 1000 by default); the
// edge client has no client-side limit by default, and --downstream-qps and --downstream-burst
// when given.
func TestRESTConfigsLimits(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args               []string
		upQPS, downQPS     float32
		upBurst, downBurst int
	}{
		{args: nil, upQPS: 500, upBurst: 1000, downQPS: -1, downBurst: 1000},
		{args: []string{"--upstream-qps=20", "--upstream-burst=30", "--downstream-qps=50", "--downstream-burst=100"}, upQPS: 20, upBurst: 30, downQPS: 50, downBurst: 100},
		{args: []string{"--upstream-qps=20", "--upstream-burst=30"}, upQPS: 20, upBurst: 30, downQPS: -1, downBurst: 1000},
		// release-0.14's --qps and --burst (deprecated aliases) limit both sides, unless --downstream-qps is given.
		{args: []string{"--qps=20", "--burst=30"}, upQPS: 20, upBurst: 30, downQPS: 20, downBurst: 30},
		{args: []string{"--qps=20", "--burst=30", "--downstream-qps=-1"}, upQPS: 20, upBurst: 30, downQPS: -1, downBurst: 1000},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--upstream-kubeconfig=" + kubeconfig, "--downstream-kubeconfig=" + kubeconfig, "--sync-target-uid=u"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		up, down, err := o.RESTConfigs()
		if err != nil {
			t.Fatal(err)
		}
		if up.QPS != tc.upQPS || up.Burst != tc.upBurst || down.QPS != tc.downQPS || down.Burst != tc.downBurst {
			t.Errorf("%v: upstream %v/%d, downstream %v/%d; want %v/%d, %v/%d", tc.args, up.QPS, up.Burst, down.QPS, down.Burst,
				tc.upQPS, tc.upBurst, tc.downQPS, tc.downBurst)
		}
	}
}

// TestLeaderElectIdentity: in a Pod ($POD_UID) the Lease identity is the Pod's, the same for each run
// of its container, so that a restarted container leads at once; elsewhere each process is another.
func TestLeaderElectIdentity(t *testing.T) {
	t.Setenv("POD_UID", "0b1c")
	o := NewOptions()
	if err := o.Complete(); err != nil || o.LeaderElectIdentity != "0b1c" {
		t.Errorf("in a Pod: %q, %v; want the Pod's UID", o.LeaderElectIdentity, err)
	}
	t.Setenv("POD_UID", "")
	a, b := NewOptions(), NewOptions()
	_, _ = a.Complete(), b.Complete()
	if a.LeaderElectIdentity == "" || a.LeaderElectIdentity == b.LeaderElectIdentity {
		t.Errorf("outside a Pod: %q and %q; want two different identities", a.LeaderElectIdentity, b.LeaderElectIdentity)
	}
}

// TestNamespacedNames: --upstream-token-secret and --executor: a bare name is in $POD_NAMESPACE;
// namespace/name stays; a name without a namespace to put it in is an error naming the flag.
func TestNamespacedNames(t *testing.T) {
	for _, tc := range []struct{ flag, value, podNamespace, want, err string }{
		{"upstream-token-secret", "kbs-upstream-token", "kbs", "kbs/kbs-upstream-token", ""},
		{"upstream-token-secret", "edge/t", "kbs", "edge/t", ""},
		{"upstream-token-secret", "kbs-upstream-token", "", "", "--upstream-token-secret needs a namespace"},
		{"upstream-token-secret", "a/b/c", "", "", "--upstream-token-secret needs a namespace"},
		{"upstream-token-secret", "", "kbs", "", ""},
		{"executor", "kbs-executor", "kbs", "kbs/kbs-executor", ""},
		{"executor", "edge/x", "kbs", "edge/x", ""},
		{"executor", "kbs-executor", "", "", "--executor needs a namespace"},
	} {
		t.Setenv("POD_NAMESPACE", tc.podNamespace)
		o := NewOptions()
		o.FromKubeconfig, o.SyncTargetUID = "k", "u"
		field := map[string]*string{"upstream-token-secret": &o.UpstreamTokenSecret, "executor": &o.Executor}[tc.flag]
		*field = tc.value
		if err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--%s=%q: error %v, want %q", tc.flag, tc.value, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("--%s=%q: %v", tc.flag, tc.value, err)
		case tc.err == "" && *field != tc.want:
			t.Errorf("--%s=%q completed as %q, want %q", tc.flag, tc.value, *field, tc.want)
		}
	}
}

// A release-0.14 syncer command line (its manifest's, with klog's flags) parses and validates; a klog
// flag this syncer cannot honour names the replacement.
func TestRelease014CommandLine(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"--from-kubeconfig=/kubestellar/kubeconfig", "--sync-target-name=edge1", "--sync-target-uid=u", "--qps=20", "--burst=30", "--v=3",
			"--logtostderr", "--alsologtostderr=false", "--stderrthreshold", "2", "--skip_headers"}},
		{args: []string{"--from-kubeconfig=k", "--to-context=edge", "--sync-target-uid=u", "--log_dir=/var/log"}, wantErr: "--log_dir: writing logs to files is not supported"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: %v, want %q", tc.args, err, tc.wantErr)
		}
		if tc.wantErr == "" && (o.DownstreamQPS != 20 || o.Logs.Verbosity != 3 || o.FromKubeconfig != "/kubestellar/kubeconfig") {
			t.Errorf("%v: downstream qps %v, -v %v, upstream kubeconfig %q; want 20, 3 and the --from-kubeconfig's", tc.args, o.DownstreamQPS, o.Logs.Verbosity, o.FromKubeconfig)
		}
	}
}

// TestMaxObjectBytes: --max-object-bytes is a quantity (0: no limit); anything else is an error
// naming the flag.
func TestMaxObjectBytes(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want int
		err  bool
	}{
		{DefaultMaxObjectBytes, 1536 << 10, false}, {"64Ki", 64 << 10, false}, {"100000", 100000, false}, {"0", 0, false},
		{"-1", 0, true}, {"lots", 0, true}, {"8Gi", 0, true},
	} {
		o := NewOptions()
		o.FromKubeconfig, o.SyncTargetUID, o.MaxObjectBytes = "k", "u", tc.flag
		got, err := o.ObjectBytesLimit()
		verr := o.Validate()
		switch {
		case tc.err && (err == nil || verr == nil || !strings.Contains(verr.Error(), "--max-object-bytes")):
			t.Errorf("%q: %d %v %v, want an error naming the flag", tc.flag, got, err, verr)
		case !tc.err && (err != nil || verr != nil || got != tc.want):
			t.Errorf("%q: %d %v %v, want %d", tc.flag, got, err, verr, tc.want)
		}
	}
}
