package options

import (
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
		{args: []string{"--syncer-config-selector=a in (b"}, wantErr: "--syncer-config-selector: unable to parse requirement: found '', expected: ',' or ')'"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--from-kubeconfig=k", "--sync-target-uid=u"}, tc.args...)); err != nil {
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
		if err := fs.Parse(append([]string{"--from-kubeconfig=k", "--sync-target-uid=u"}, tc.args...)); err != nil {
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
