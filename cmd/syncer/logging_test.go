package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// loggingHelperEnv, when set, makes the test binary a small syncer that sets up its logging from the
// arguments in the variable (one per line) exactly as the syncer does, logs what logSome logs, and
// exits: the logging configuration is process-wide, so each case runs in a process of its own.
const loggingHelperEnv = "SYNCER_TEST_LOGGING_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(loggingHelperEnv); ok {
		os.Exit(loggingHelper(strings.FieldsFunc(args, func(r rune) bool { return r == '\n' })))
	}
	os.Exit(m.Run())
}

// loggingHelper parses args as main does and prepares the options as run does (the logs on stderr),
// then logs.
func loggingHelper(args []string) int {
	opts, done, err := parseFlags(append([]string{"--upstream-kubeconfig=k", "--sync-target-uid=u"}, args...), os.Stdout, os.Stderr)
	if err == nil && done {
		err = errors.New("done after parsing")
	}
	if err == nil {
		err = prepare(opts, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	logSome()
	return 0
}

// logSome logs what the syncer logs, the way it does: through the logger in the context at levels 0,
// 4 and 5, and through klog's global functions at level 6 as client-go's request logging does.
func logSome() {
	logger := klog.FromContext(context.Background()).WithValues("syncTarget", "demo")
	logger.Info("Starting syncer", "syncTargetUID", "u")
	logger.V(4).Info("Downstream object is up to date", "key", "configmaps a/b")
	logger.V(5).Info("Enqueued", "key", "configmaps a/c")
	klog.V(6).InfoS("GET https://up/api 200 OK")
	klog.Flush()
}

// runLogging runs the test binary as the logging helper with args and returns what it wrote on
// stderr (the logs) after checking that it succeeded and wrote nothing on stdout.
func runLogging(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loggingHelperEnv+"="+strings.Join(args, "\n"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("%v: stdout %q, want the logs on stderr only", args, stdout.String())
	}
	return stderr.String()
}

// TestLoggingFormatJSON: --logging-format=json, parsed by the syncer's flag set and applied as the
// binary applies it, makes the syncer log one JSON object per line, with the message, the verbosity
// and the key/values as fields; -v still selects the lines.
func TestLoggingFormatJSON(t *testing.T) {
	logs := runLogging(t, "--logging-format=json", "-v=4")

	var got []map[string]interface{}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var entry map[string]interface{}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", line, err)
		}
		got = append(got, entry)
	}
	if len(got) != 2 {
		t.Fatalf("logged %v, want the level 0 and 4 lines only (-v=4)", got)
	}
	for i, want := range []struct {
		msg, key, value string
		v               float64
	}{
		{"Starting syncer", "syncTargetUID", "u", 0},
		{"Downstream object is up to date", "key", "configmaps a/b", 4},
	} {
		e := got[i]
		if e["msg"] != want.msg || e[want.key] != want.value || e["v"] != want.v || e["ts"] == nil || e["caller"] == nil {
			t.Errorf("line %d: %v, want msg %q, %s=%q, v %v, ts and caller", i, e, want.msg, want.key, want.value, want.v)
		}
	}
}

// TestLoggingTextAndVerbosity: without --logging-format the logs are klog's text lines, as before;
// -v selects them exactly as before: -v=4 shows levels 0 to 4, -v=6 client-go's request lines too.
func TestLoggingTextAndVerbosity(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{args: nil, want: []string{`] "Starting syncer" syncTarget="demo" syncTargetUID="u"`},
			not: []string{"up to date", "Enqueued", "GET https://up/api"}},
		{args: []string{"--logging-format=text", "-v=4"}, want: []string{"Starting syncer", `] "Downstream object is up to date" syncTarget="demo" key="configmaps a/b"`},
			not: []string{"Enqueued", "GET https://up/api"}},
		{args: []string{"-v=6"}, want: []string{"Starting syncer", "up to date", "Enqueued", `"GET https://up/api 200 OK"`}},
	} {
		t.Run(strings.Join(append([]string{"args"}, tc.args...), " "), func(t *testing.T) {
			out := runLogging(t, tc.args...)
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasPrefix(line, "I") || !strings.Contains(line, "] ") {
					t.Errorf("not a klog text line: %q", line)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in the logs:\n%s", want, out)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(out, not) {
					t.Errorf("%q logged at this verbosity:\n%s", not, out)
				}
			}
		})
	}
}

// TestLoggingFormatRefused: an unknown --logging-format stops the syncer before it logs or connects
// anywhere, with a message that names the flag, the value and the formats there are.
func TestLoggingFormatRefused(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loggingHelperEnv+"=--logging-format=bogus")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.TrimSpace(string(out)) != `helper: --logging-format must be one of text, json (got "bogus")` {
		t.Errorf("err %v, output %q", err, out)
	}
}
