// Command bench measures the syncer on a real control plane (etcd, two kube-apiservers, a
// kube-controller-manager at the edge; test/testenv) and prints one table, also written as JSON:
// initial-sync throughput against the physical limit measured in the same run (a bare client, a bare
// relay), change latency for downsync, status return and upsync under churn, idle API cost, memory
// per object, a model of the release-0.14 polling syncer on the same workloads, and what N syncers,
// one mailbox each, cost one shared upstream; and, not by default (-scenarios podmemory), the
// syncer's working set as a Pod on a real edge node under the memory limit syncer-gen derives.
//
//	go run ./test/bench -syncer bin/syncer -bin-dir $E2E_BIN   (make bench; -quick for a smoke run)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubestellar/syncer/test/testenv"
)

type config struct {
	syncer string
	// baseline, if set, is a second syncer binary each scenario runs with first, its figures
	// recorded as "baseline: <scenario>" (an A/B in one run, on the same control plane).
	baseline   string
	binDir     string
	kcpBinDir  string
	out        string
	repeat     int
	quick      bool
	keep       bool
	scenarios  map[string]bool
	syncerArgs []string
	// sizes, if set, are the object counts of the sync and memory scenarios (sync: ConfigMaps only).
	sizes []int
	// profiles, if set, is where the memory scenario saves the syncer's heap profiles.
	profiles string
	// cpuProfiles, if set, is where the sync scenario saves the syncer's CPU profile of each fill.
	cpuProfiles string
	// memoryAge is how long the memory scenario lets a filled syncer run before measuring.
	memoryAge time.Duration
	// idleWindow, if set, is how long each idle measurement lasts.
	idleWindow time.Duration
	// edges are the syncer counts of the edges scenario; edgeObjects the ConfigMaps in each mailbox.
	edges       []int
	edgeObjects int
	// plugin is syncer-gen, syncerImage the syncer's image as the edge's node holds it (imported from
	// syncerImageArchive): the podmemory scenario runs the syncer as a Pod of syncer-gen's manifest.
	plugin, syncerImage, syncerImageArchive string
}

func main() {
	var c config
	var scenarios, extra string
	flag.StringVar(&c.syncer, "syncer", "bin/syncer", "The syncer binary.")
	flag.StringVar(&c.baseline, "baseline-syncer", "", "A second syncer binary (an older build, say): each scenario runs with it first, its rows prefixed \"baseline:\".")
	flag.StringVar(&c.binDir, "bin-dir", os.Getenv("E2E_BIN"), "etcd, kube-apiserver, kube-controller-manager (make e2e-bins).")
	flag.StringVar(&c.kcpBinDir, "kcp-bin-dir", os.Getenv("KCP_BIN"), "kcp and crd-puller (make kcp-bins), for the mailboxes scenario.")
	flag.StringVar(&c.out, "out", "bench-results.json", "Where to write the results as JSON.")
	flag.IntVar(&c.repeat, "repeat", 3, "Repetitions of each figure (median and spread are printed).")
	flag.BoolVar(&c.quick, "quick", false, "Small sizes and one repetition: a smoke run, not figures.")
	flag.StringVar(&scenarios, "scenarios", "edges,settings,sync,idle,latency,memory,polling,mailboxes,namespaces", "Which scenarios to run (mailboxes needs kcp: -kcp-bin-dir). Also podmemory, not by default: the syncer as a Pod on a real edge node (root, make node-bins, make image), its working set against syncer-gen's memory limit at the memory scenario's sizes.")
	flag.StringVar(&extra, "syncer-args", "", "Extra syncer flags, space-separated (e.g. \"--downstream-qps=500 --workers=32\").")
	var sizes string
	flag.StringVar(&sizes, "sizes", "", "Object counts of the sync, memory and podmemory scenarios, comma-separated (e.g. 1000,10000; sync then runs ConfigMaps only). Default: 1000 and 10000 (sync), 1000, 10000 and 100000 (memory, podmemory).")
	flag.StringVar(&c.profiles, "heap-profiles", "", "A folder where the memory scenario saves the syncer's heap profile at each size.")
	flag.StringVar(&c.cpuProfiles, "cpu-profiles", "", "A folder where the sync scenario saves the syncer's CPU profile of each fill (its first seconds: 1 per 500 objects, 2 to 30).")
	var edges string
	flag.StringVar(&edges, "edges", "", "Syncer counts of the edges scenario, comma-separated (default 10,50; -quick 3,6).")
	flag.IntVar(&c.edgeObjects, "edge-objects", 10, "ConfigMaps in each mailbox of the edges scenario.")
	flag.DurationVar(&c.idleWindow, "idle-window", 0, "How long each idle measurement lasts (default 1m; -quick 15s); the heartbeat refreshes every 5m, so take 5m or more for bytes per day.")
	flag.DurationVar(&c.memoryAge, "memory-age", 0, "How long the memory and podmemory scenarios let the syncer run once settled before measuring (e.g. 3m: per-key bookkeeping kept for a write-loop window is then gone).")
	flag.StringVar(&c.plugin, "plugin", "bin/kubectl-kubestellar-syncer_gen", "syncer-gen (make build), for the podmemory scenario.")
	flag.StringVar(&c.syncerImage, "syncer-image", "kubestellar-syncer:dev", "The syncer's image the podmemory scenario runs (syncer-gen's --syncer-image).")
	flag.StringVar(&c.syncerImageArchive, "syncer-image-archive", "_output/image/syncer-image.docker.tar", "The archive of -syncer-image (make image) that the podmemory scenario imports into the edge's node.")
	flag.BoolVar(&c.keep, "keep", false, "Keep the working folder (the syncers' and the control plane's logs) after a successful run too.")
	flag.Parse()
	c.sizes, c.edges = counts("-sizes", sizes), counts("-edges", edges)
	if c.edgeObjects <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -edge-objects must be positive")
		os.Exit(2)
	}
	c.scenarios = map[string]bool{}
	for _, s := range strings.Split(scenarios, ",") {
		c.scenarios[strings.TrimSpace(s)] = true
	}
	c.syncerArgs = strings.Fields(extra)
	if c.quick {
		c.repeat = 1
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// counts parses a comma-separated list of positive counts, or exits.
func counts(flagName, list string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: %s: not a count: %s\n", flagName, f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

func run(c config) (err error) {
	if missing := testenv.MissingBinaries(c.binDir); c.binDir == "" || len(missing) > 0 {
		return fmt.Errorf("control-plane binaries %v missing in -bin-dir %q (make e2e-bins)", missing, c.binDir)
	}
	syncer, err := filepath.Abs(c.syncer)
	if err != nil {
		return err
	}
	c.syncer = syncer
	if _, err := os.Stat(c.syncer); err != nil {
		return fmt.Errorf("the syncer binary: %w (make build)", err)
	}
	if c.baseline != "" {
		if c.baseline, err = filepath.Abs(c.baseline); err != nil {
			return err
		}
		if _, err := os.Stat(c.baseline); err != nil {
			return fmt.Errorf("the baseline syncer binary: %w", err)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	dir, err := os.MkdirTemp("", "syncer-bench-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil || c.keep {
			logf("kept %s: the syncer's and the control plane's logs", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	logf("starting etcd, two kube-apiservers and a kube-controller-manager in %s", dir)
	opts := testenv.Options{BinDir: c.binDir, Dir: filepath.Join(dir, "env"), Log: os.Stderr}
	if c.scenarios["mailboxes"] {
		if missing := testenv.MissingKCPBinaries(c.kcpBinDir); len(missing) > 0 {
			return fmt.Errorf("the mailboxes scenario needs kcp: %v missing in -kcp-bin-dir %q (make kcp-bins)", missing, c.kcpBinDir)
		}
		opts.KCP, opts.KCPBinDir = true, c.kcpBinDir
	}
	if c.scenarios["podmemory"] {
		if err := podMemoryOptions(&c, &opts); err != nil {
			return err
		}
		logf("with a node at the edge (containerd, kubelet) for the podmemory scenario: the servers listen on its host address")
	}
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil {
			logf("stopping the control plane: %v", stopErr)
		}
	}()
	b, err := newBench(ctx, c, env, dir)
	if err != nil {
		return err
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"edges", b.edges},
		{"settings", b.settings},
		{"sync", b.initialSync},
		{"idle", b.idle},
		{"latency", b.latency},
		{"memory", b.memory},
		{"polling", b.polling},
		{"mailboxes", b.mailboxes},
		{"namespaces", b.namespaces},
		{"podmemory", b.podMemory},
	}
	for _, s := range steps {
		if !c.scenarios[s.name] {
			continue
		}
		if c.baseline != "" && s.name != "idle" {
			fn := s.fn
			if s.name == "sync" && c.scenarios["idle"] {
				// idle measures the syncer sync leaves running: the baseline's, before asBaseline stops it.
				fn = func(ctx context.Context) error {
					if err := b.initialSync(ctx); err != nil {
						return err
					}
					return b.idle(ctx)
				}
			}
			logf("== scenario %s, baseline syncer %s", s.name, c.baseline)
			if err := b.asBaseline(ctx, fn); err != nil {
				return fmt.Errorf("scenario %s, baseline syncer: %w", s.name, err)
			}
		}
		logf("== scenario %s", s.name)
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("scenario %s: %w", s.name, err)
		}
	}
	b.print(os.Stdout)
	return b.writeJSON(c.out)
}

func logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// header describes the machine and versions.
func header(c config) map[string]string {
	h := map[string]string{
		"cores":       fmt.Sprint(runtime.NumCPU()),
		"go":          runtime.Version(),
		"kubernetes":  "v" + os.Getenv("K8S_VERSION"),
		"date":        time.Now().UTC().Format(time.RFC3339),
		"repeat":      fmt.Sprint(c.repeat),
		"quick":       fmt.Sprint(c.quick),
		"syncerArgs":  strings.Join(c.syncerArgs, " "),
		"syncer":      c.syncer,
		"baseline":    c.baseline,
		"sizes":       fmt.Sprint(c.sizes),
		"memoryAge":   c.memoryAge.String(),
		"edges":       fmt.Sprint(c.edges),
		"edgeObjects": fmt.Sprint(c.edgeObjects),
	}
	if c.scenarios["podmemory"] {
		h["syncerImage"] = c.syncerImage
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				h["client-go"] = d.Version
			}
		}
	}
	return h
}

func (b *bench) writeJSON(path string) error {
	data, err := json.MarshalIndent(map[string]interface{}{"header": header(b.cfg), "results": b.results}, "", "  ")
	if err != nil {
		return err
	}
	logf("writing %s", path)
	return os.WriteFile(path, data, 0o644)
}
