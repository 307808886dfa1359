package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpAndVersionOnStdout: --help and -h print the description, the usage and the flags on
// stdout (the new leader-election names shown, the deprecated ones hidden), --version one line; each
// is done (the process exits 0) and nothing goes to stderr.
func TestHelpAndVersionOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--sync-target-uid=x", "--help"}} {
		var stdout, stderr bytes.Buffer
		opts, done, err := parseFlags(args, &stdout, &stderr)
		if err != nil || !done || opts != nil {
			t.Fatalf("%v: done %v, err %v", args, done, err)
		}
		out := stdout.String()
		if !strings.HasPrefix(out, "The KubeStellar syncer runs in an edge cluster") || !strings.Contains(out, "\n\nUsage:\n  syncer --upstream-kubeconfig") {
			t.Errorf("%v: stdout does not begin with the description and the usage:\n%s", args, out)
		}
		for _, want := range []string{"--leader-elect-resource-namespace", "--leader-elect-resource-name", "--version", "--workers", "-v, --v"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %s", args, want)
			}
		}
		for _, hidden := range []string{"--leader-elect-namespace", "--leader-elect-lease-name"} {
			if strings.Contains(out, hidden) {
				t.Errorf("%v: help shows the deprecated %s", args, hidden)
			}
		}
		if stderr.Len() != 0 {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
	}

	var stdout, stderr bytes.Buffer
	if _, done, err := parseFlags([]string{"--version"}, &stdout, &stderr); err != nil || !done {
		t.Fatalf("--version: done %v, err %v", done, err)
	}
	line := stdout.String()
	if !strings.HasPrefix(line, "syncer ") || strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") ||
		!strings.Contains(line, "(revision ") || !strings.Contains(line, " go1.") || stderr.Len() != 0 {
		t.Errorf("--version printed %q (stderr %q), want one line: syncer <version> (revision <commit>, <go version>, <os>/<arch>)", line, stderr.String())
	}
}

// TestLeaderElectFlagNames: the Kubernetes names set the Lease's namespace and name; the old names
// still do, with one deprecation line each on stderr.
func TestLeaderElectFlagNames(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantStderr []string
	}{
		{args: []string{"--leader-elect-resource-namespace=ns", "--leader-elect-resource-name=lease"}},
		{args: []string{"--leader-elect-namespace=ns", "--leader-elect-lease-name", "lease"}, wantStderr: []string{
			"Flag --leader-elect-namespace has been deprecated, use --leader-elect-resource-namespace instead",
			"Flag --leader-elect-lease-name has been deprecated, use --leader-elect-resource-name instead",
		}},
	} {
		var stdout, stderr bytes.Buffer
		opts, done, err := parseFlags(tc.args, &stdout, &stderr)
		if err != nil || done {
			t.Fatalf("%v: done %v, err %v", tc.args, done, err)
		}
		if opts.LeaderElectResourceNamespace != "ns" || opts.LeaderElectResourceName != "lease" {
			t.Errorf("%v: namespace %q name %q", tc.args, opts.LeaderElectResourceNamespace, opts.LeaderElectResourceName)
		}
		if got := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(tc.wantStderr, "\n") {
			t.Errorf("%v: stderr %q, want %q", tc.args, got, tc.wantStderr)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q", tc.args, stdout.String())
		}
	}
}

// TestUnknownFlag: a parse error is returned (the caller prints it and exits 2) and points at --help.
func TestUnknownFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	_, done, err := parseFlags([]string{"--leader-elect-lease"}, &stdout, &stderr)
	if err == nil || done || err.Error() != "unknown flag: --leader-elect-lease (see --help)" || stdout.Len() != 0 {
		t.Errorf("done %v, err %v, stdout %q", done, err, stdout.String())
	}
}
