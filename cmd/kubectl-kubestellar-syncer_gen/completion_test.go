package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubestellar/syncer/test/support"
)

// asPluginEnv set to 1 makes the test binary run main (TestMain).
const asPluginEnv = "KUBESTELLAR_SYNCER_GEN_TEST_AS_PLUGIN"

// completions runs the binary as argv0 with args and returns its stdout's lines.
func completions(t *testing.T, argv0 string, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := execute(context.Background(), argv0, args, &stdout, &stderr); err != nil {
		t.Fatalf("%s %v: %v", argv0, args, err)
	}
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}

// names are the candidates of completion output (each "name<TAB>description"), without the
// directive line.
func names(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, ":") {
			name, _, _ := strings.Cut(l, "\t")
			out = append(out, name)
		}
	}
	return out
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestComplete: flags, their values and the sync target name complete, under the plugin's name and
// through the completion executables kubectl runs.
func TestComplete(t *testing.T) {
	api := newFakeAPI(t, "florin", "flanders", "guilder")
	kubeconfig := api.kubeconfig(t)
	for _, tc := range []struct {
		name, argv0 string
		args        []string
		want        []string
	}{
		{"flag", pluginName, []string{"__complete", "--rb"}, []string{"--rbac"}},
		{"flag value", pluginName, []string{"__complete", "--rbac", ""}, []string{"broad", "least"}},
		{"resources flags", pluginName, []string{"__complete", "--limits"}, []string{"--limits-cpu", "--limits-memory"}},
		{"contexts of the kubeconfig given", pluginName, []string{"__complete", "--kubeconfig", kubeconfig, "--context", ""}, []string{"mailbox", "other"}},
		{"users", pluginName, []string{"__complete", "--kubeconfig", kubeconfig, "--user", "n"}, []string{"nobody"}},
		{"sync target names from the SyncerConfigs upstream", pluginName, []string{"__complete", "--kubeconfig", kubeconfig, "fl"}, []string{"flanders", "florin"}},
		{"nothing after the sync target", pluginName, []string{"__complete", "--kubeconfig", kubeconfig, "florin", ""}, nil},
		{"shells", pluginName, []string{"__complete", "completion", ""}, []string{"bash", "zsh", "fish", "powershell"}},
		{"kubectl_complete-kubestellar-syncer_gen", "/some/dir/kubectl_complete-kubestellar-syncer_gen", []string{"--rbac", ""}, []string{"broad", "least"}},
		{"kubectl_complete-kubestellar: the command", "kubectl_complete-kubestellar", []string{"sy"}, []string{"syncer-gen"}},
		{"kubectl_complete-kubestellar: its flags", "kubectl_complete-kubestellar", []string{"syncer-gen", "--upstream-n"}, []string{"--upstream-namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := completions(t, tc.argv0, tc.args...)
			if got := names(lines); !equal(got, tc.want) {
				t.Errorf("completions %q, want %q (output %q)", got, tc.want, lines)
			}
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, ":") {
				t.Errorf("no directive line: %q", lines)
			}
		})
	}
}

// TestInvocationNames: run as krew's kubectl-kubestellar, the binary takes syncer-gen as its command
// and refuses others.
func TestInvocationNames(t *testing.T) {
	if got := completions(t, "/home/u/.krew/bin/kubectl-kubestellar", "syncer-gen", "--version"); len(got) != 1 || !strings.HasPrefix(got[0], pluginName+" ") {
		t.Errorf("kubectl-kubestellar syncer-gen --version: %q", got)
	}
	var stdout, stderr bytes.Buffer
	err := execute(context.Background(), "kubectl-kubestellar", []string{"florin"}, &stdout, &stderr)
	if err == nil || err.Error() != `unknown command "florin" for "kubectl kubestellar"` {
		t.Errorf("kubectl-kubestellar florin: %v", err)
	}
	stdout.Reset()
	if err := execute(context.Background(), "kubectl-kubestellar", []string{"syncer-gen", "--help"}, &stdout, &stderr); err != nil ||
		!strings.HasPrefix(stdout.String(), "kubectl kubestellar syncer-gen bootstraps") {
		t.Errorf("kubectl-kubestellar syncer-gen --help: %v\n%s", err, stdout.String())
	}
}

// TestCompletionScripts: completion prints each shell's script for the binary's name; bash's is valid
// bash; another shell is refused.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "complete -o default -F __start_kubectl-kubestellar-syncer_gen kubectl-kubestellar-syncer_gen",
		"zsh":        "#compdef kubectl-kubestellar-syncer_gen",
		"fish":       "complete -c kubectl-kubestellar-syncer_gen",
		"powershell": "Register-ArgumentCompleter -CommandName 'kubectl-kubestellar-syncer_gen'",
	} {
		var stdout, stderr bytes.Buffer
		if err := run([]string{"completion", shell}, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("%s script lacks %q", shell, want)
		}
		if shell == "bash" {
			if _, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command("bash", "-n")
				cmd.Stdin = &stdout
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("bash -n: %v\n%s", err, out)
				}
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"completion", "tcsh"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), `invalid argument "tcsh"`) {
		t.Errorf("completion tcsh: %v", err)
	}
}

// execDir makes a directory holding links, named names, to the test binary, which TestMain makes the
// plugin when asPluginEnv is set; it returns the directory.
func execDir(t *testing.T, names ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBashCompletion: the bash script, sourced, completes a flag's values through the binary.
func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		support.Skip(t, "no bash")
	}
	dir := execDir(t, pluginName)
	// A stand-in for bash-completion's _get_comp_words_by_ref, which the script uses.
	script := `
_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(kubectl-kubestellar-syncer_gen completion bash)
COMP_WORDS=(kubectl-kubestellar-syncer_gen --rbac "")
COMP_CWORD=2
COMP_LINE="kubectl-kubestellar-syncer_gen --rbac "
COMP_POINT=${#COMP_LINE}
__start_kubectl-kubestellar-syncer_gen 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), asPluginEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); !equal(got, []string{"broad", "least"}) {
		t.Errorf("bash completes --rbac with %q", got)
	}
}

// TestKubectlRunsPluginAndCompletion: the real kubectl (from E2E_BIN; skipped without it) runs the
// binary for `kubectl kubestellar syncer-gen` and completes its arguments through the completion
// executable, both as `make build` lays them out and as krew does (with the link docs/install.md says to
// make).
func TestKubectlRunsPluginAndCompletion(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("E2E_BIN"), "kubectl")
	if _, err := os.Stat(kubectl); os.Getenv("E2E_BIN") == "" || err != nil {
		support.Skip(t, "no kubectl in $E2E_BIN (make e2e-bins builds it; make test-unit sets it)")
	}
	for _, layout := range []struct {
		name  string
		links []string
	}{
		{"make build", []string{pluginName, "kubectl_complete-kubestellar-syncer_gen", signName}},
		{"krew", []string{"kubectl-kubestellar", "kubectl_complete-kubestellar"}},
	} {
		t.Run(layout.name, func(t *testing.T) {
			dir := execDir(t, layout.links...)
			kubectlRun := func(args ...string) []string {
				t.Helper()
				cmd := exec.Command(kubectl, args...)
				cmd.Env = []string{"PATH=" + dir, "HOME=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none"), asPluginEnv + "=1"}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("kubectl %v: %v\n%s", args, err, stderr.String())
				}
				return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			}
			if got := kubectlRun("kubestellar", "syncer-gen", "--version"); len(got) != 1 || !strings.HasPrefix(got[0], pluginName+" ") {
				t.Errorf("kubectl kubestellar syncer-gen --version: %q", got)
			}
			if got := names(kubectlRun("__complete", "kubestellar", "")); !equal(got, []string{"sign", "syncer-gen"}) && !equal(got, []string{"help", "sign", "syncer-gen"}) {
				t.Errorf("kubectl kubestellar <TAB>: %q", got)
			}
			if got := kubectlRun("kubestellar", "sign", "--help"); !strings.Contains(strings.Join(got, "\n"), "kubectl kubestellar sign -f <manifest> --key <private key>") {
				t.Errorf("kubectl kubestellar sign --help: %q", got)
			}
			if got := names(kubectlRun("__complete", "kubestellar", "syncer-gen", "--rbac", "")); !equal(got, []string{"broad", "least"}) {
				t.Errorf("kubectl kubestellar syncer-gen --rbac <TAB>: %q", got)
			}
			if got := names(kubectlRun("__complete", "kubestellar", "syncer-gen", "--requests-m")); !equal(got, []string{"--requests-memory"}) {
				t.Errorf("kubectl kubestellar syncer-gen --requests-m<TAB>: %q", got)
			}
		})
	}
}
