package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestMain makes the test binary the plugin when a test runs it under one of the plugin's names
// (see execDir).
func TestMain(m *testing.M) {
	if os.Getenv(asPluginEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHelpAndVersionOnStdout: --help and -h print the description, the usage and the flags (the
// plugin's, then kubectl's connection flags, then the completion command) on stdout, --version one
// line; each succeeds (exit 0) and nothing goes to stderr.
func TestHelpAndVersionOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"florin", "--help"}} {
		var stdout, stderr bytes.Buffer
		if err := run(args, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		out := stdout.String()
		if !strings.HasPrefix(out, "kubectl kubestellar syncer-gen bootstraps a KubeStellar syncer") ||
			!strings.Contains(out, "\n\nUsage:\n  kubectl kubestellar syncer-gen <sync-target-name>") || !strings.Contains(out, "--output-file") ||
			!strings.Contains(out, "--version") || !strings.Contains(out, "--helm-values") || !strings.Contains(out, "--requests-cpu") ||
			!strings.Contains(out, "\nConnection flags (kubectl's") || !strings.Contains(out, "--request-timeout string") ||
			!strings.Contains(out, `(default "15s")`) || !strings.Contains(out, "  -s, --server") || !strings.Contains(out, "--as-group") ||
			!strings.Contains(out, "\nCommands:\n  completion bash|zsh|fish|powershell") || strings.Contains(out, "--cache-dir") {
			t.Errorf("%v: stdout does not begin with the description, the usage and the flags:\n%s", args, out)
		}
		if stderr.Len() != 0 {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"--version"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	line := stdout.String()
	if !strings.HasPrefix(line, "kubectl-kubestellar-syncer_gen ") || strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") ||
		!strings.Contains(line, "(revision ") || stderr.Len() != 0 {
		t.Errorf("--version printed %q (stderr %q)", line, stderr.String())
	}
}

// fakeMailbox is an upstream that answers every request with 503 and counts them, and a kubeconfig
// pointing at it.
func fakeMailbox(t *testing.T) (kubeconfig string, requests *atomic.Int32) {
	t.Helper()
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters: [{name: mailbox, cluster: {server: "` + srv.URL + `"}}]
users: [{name: admin, user: {token: secret}}]
contexts: [{name: mailbox, context: {cluster: mailbox, user: admin}}]
current-context: mailbox
`
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, requests
}

// TestUnwritableOutputStopsFirst: when the -o file cannot be written, syncer-gen stops with one line
// saying so before it sends a single request upstream (a run rotates the token).
func TestUnwritableOutputStopsFirst(t *testing.T) {
	kubeconfig, requests := fakeMailbox(t)
	output := filepath.Join(t.TempDir(), "no-such-dir", "florin.yaml")
	var stdout, stderr bytes.Buffer
	err := run([]string{"florin", "--syncer-image=example.com/syncer:dev", "--kubeconfig=" + kubeconfig, "-o", output}, &stdout, &stderr)
	want := "cannot write the manifest to " + output + " (-o): no such file or directory; nothing was changed upstream"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent upstream", n)
	}
}

// TestNoStrayOutputWhenRunFails: the output check leaves nothing behind, so a run that passes it and
// then fails upstream leaves no (empty) manifest file.
func TestNoStrayOutputWhenRunFails(t *testing.T) {
	kubeconfig, requests := fakeMailbox(t)
	output := filepath.Join(t.TempDir(), "florin.yaml")
	var stdout, stderr bytes.Buffer
	err := run([]string{"florin", "--syncer-image=example.com/syncer:dev", "--kubeconfig=" + kubeconfig, "-o", output}, &stdout, &stderr)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot use the upstream at ") {
		t.Fatalf("error %v, want the upstream to be unusable", err)
	}
	if requests.Load() == 0 {
		t.Error("no request reached the upstream")
	}
	if _, err := os.Stat(output); !os.IsNotExist(err) {
		t.Errorf("the output file exists after the failed run (%v)", err)
	}
}

// A release-0.14 syncer-gen command line parses: --labels (checked, unused, as there) and klog's
// flags; a label that is not one, or logs to a file, is an error naming why.
func TestRelease014Flags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"--syncer-image=img", "-o", "-", "--labels=env=prod,tier=edge", "--v=3", "--logtostderr"}},
		{args: []string{"--syncer-image=img", "-o", "-", "-v", "2", "--alsologtostderr=true"}},
		{args: []string{"--syncer-image=img", "-o", "-", "--labels=prod"}, wantErr: `--labels "prod": want key=value labels`},
		{args: []string{"--syncer-image=img", "-o", "-", "--log_file=/tmp/x"}, wantErr: "writing logs to files is not supported"},
	} {
		o := newOptions()
		cmd := o.command("syncer-gen", io.Discard, io.Discard)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := o.complete(cmd.Flags())
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}
