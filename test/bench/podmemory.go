package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/test/support"
	"github.com/kubestellar/syncer/test/testenv"
)

// The podmemory scenario runs the syncer as its users do: syncer-gen's manifest applied at the edge,
// the syncer a Pod of its Deployment on the test bed's node (testenv Options.Node), from the image
// `make image` builds, under the memory limit syncer-gen derives from --expected-objects. It reads
// the container's memory as the kubelet sees it (its Summary API: the working set, which is what
// the kubelet evicts on and what `kubectl top` shows) against that limit.

// podMemoryOptions checks what the podmemory scenario needs (the plugin, the image archive) and
// gives the test bed a node that imports the image.
func podMemoryOptions(c *config, opts *testenv.Options) error {
	plugin, err := filepath.Abs(c.plugin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(plugin); err != nil {
		return fmt.Errorf("the podmemory scenario runs syncer-gen: %w (make build)", err)
	}
	c.plugin = plugin
	archive, err := filepath.Abs(c.syncerImageArchive)
	if err != nil {
		return err
	}
	if _, err := os.Stat(archive); err != nil {
		return fmt.Errorf("the podmemory scenario runs the syncer's image, and its archive is missing: %w (run make image)", err)
	}
	opts.Node, opts.NodeImages = true, []string{archive}
	if opts.NodeDir = os.Getenv("NODE_DIR"); opts.NodeDir == "" {
		opts.NodeDir = testenv.DefaultNodeDir()
	}
	return nil
}

// podReading is what one round of the podmemory scenario read.
type podReading struct {
	// workingSet, rss are the container's, from the kubelet's Summary API (bytes).
	workingSet, rss float64
	// limit and request are the container's memory limit and request in the pod's spec (bytes).
	limit, request float64
	restarts       int32
	// lastState describes the container's last termination, if it has one ("" otherwise).
	lastState string
	// processRSS is the syncer's own RSS from its /metrics (bytes); heap and goLimit, its heap in use
	// and Go memory limit, are for the log.
	heap, processRSS, goLimit float64
	// id is the syncer's ID (syncer-gen's): its Deployment's name.
	id string
}

// podMemory measures, at each size (memorySizes), the working set of a syncer Pod run from
// syncer-gen's manifest with --expected-objects set to that size, against the limit syncer-gen
// derived, and per object above a baseline round with nothing selected. Each round is a fresh Pod:
// syncer-gen run again, its manifest applied, everything it made at the edge deleted afterwards.
func (b *bench) podMemory(ctx context.Context) error {
	if b.label != "" {
		logf("podmemory: skipped with the baseline syncer: the Pod runs the image %s, not a binary", b.cfg.syncerImage)
		return nil
	}
	if err := b.checkNodeImage(); err != nil {
		return err
	}
	if b.syncer != nil { // the sync scenario's, kept for the idle scenario, which did not run
		b.syncer.stopProcess()
		b.syncer = nil
		if err := deleteNamespaces(ctx, b.down, b.kept); err != nil {
			return err
		}
	}
	sizes := b.memorySizes()
	logf("podmemory: emptying the upstream of SyncerConfigs and ConfigMaps (a mailbox holds only what goes to its edge)")
	// syncer-gen's syncer reads every SyncerConfig: only the bench's may select anything.
	if err := b.up.dyn.Resource(gvrSyncerConfig).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	empty, err := b.memoryUpstream(ctx)
	if err != nil {
		return err
	}
	base, err := b.podRound(ctx, empty)
	if base.id != "" {
		defer b.removeUpstreamIdentity(base.id) // the same at every size: one sync target, one upstream
	}
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	b.recordPod("baseline (nothing selected exists)", base, 0, nil)
	prev := 0
	for _, n := range sizes {
		if n < prev { // the upstream holds the objects of the larger size before: start again
			if err := clearConfigMaps(ctx, b.up); err != nil {
				return err
			}
		}
		prev = n
		w := newWorkload("mem", gvrConfigMaps, n, 100)
		label := fmt.Sprintf("%d ConfigMaps", n)
		logf("podmemory: %s: creating upstream", label)
		if err := w.create(ctx, b.up, nil); err != nil {
			return err
		}
		r, err := b.podRound(ctx, w)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		b.recordPod(label, r, n, &base)
	}
	return nil
}

// recordPod records a round's figures; with base, also the working set per object above it.
func (b *bench) recordPod(label string, r podReading, n int, base *podReading) {
	const s = "pod memory"
	note := fmt.Sprintf("syncer-gen --expected-objects %d: request %s MiB", n, format(r.request/(1<<20)))
	b.record(s, label+": working set", "MiB", []float64{r.workingSet / (1 << 20)}, "the kubelet's Summary API")
	b.record(s, label+": RSS (kubelet)", "MiB", []float64{r.rss / (1 << 20)}, "the container's cgroup: anonymous memory")
	b.record(s, label+": RSS (the syncer's /metrics)", "MiB", []float64{r.processRSS / (1 << 20)}, "the process's, as the memory scenario reads it: its binary's mapped pages too")
	b.record(s, label+": memory limit", "MiB", []float64{r.limit / (1 << 20)}, note)
	b.record(s, label+": working set ÷ limit", "ratio", []float64{r.workingSet / r.limit}, "")
	if base != nil && n > 0 {
		b.record(s, label+": working set per object", "bytes", []float64{(r.workingSet - base.workingSet) / float64(n)}, "above the baseline")
	}
	restartNote := ""
	if r.lastState != "" {
		restartNote = "last: " + r.lastState
	}
	b.record(s, label+": container restarts", "restarts", []float64{float64(r.restarts)}, restartNote)
}

// checkNodeImage fails unless the edge's node holds the syncer's image.
func (b *bench) checkNodeImage() error {
	if b.env.Node == nil {
		return errors.New("the test bed has no node (the podmemory scenario starts one)")
	}
	for _, img := range b.env.Node.Images {
		if img == b.cfg.syncerImage || strings.HasSuffix(img, "/"+b.cfg.syncerImage) {
			return nil
		}
	}
	return fmt.Errorf("the edge's node does not hold the syncer's image %s (it holds %v): is -syncer-image-archive %s an archive of it? (run make image)",
		b.cfg.syncerImage, b.env.Node.Images, b.cfg.syncerImageArchive)
}

// podRound runs one syncer Pod over the workload (already upstream) and reads its memory once it
// has synced every object and settled; then it deletes what it made at the edge.
func (b *bench) podRound(ctx context.Context, w workload) (r podReading, err error) {
	var c *counter
	if w.n > 0 {
		if c, err = watchCount(ctx, b.down, gvrConfigMaps, ownedSelector, w.namespaces, w.n, nil); err != nil {
			return r, err
		}
		defer c.stop()
	}
	manifest := filepath.Join(b.dir, fmt.Sprintf("syncer-pod-%d.yaml", w.n))
	if err := b.syncerGen(ctx, w.n, manifest); err != nil {
		return r, err
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		return r, err
	}
	start := time.Now()
	applied, err := applyManifest(ctx, b.down, data)
	defer func() {
		if cerr := b.deletePodSyncer(ctx, applied, w.namespaces); err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return r, err
	}
	var dep appliedObject
	for _, o := range applied {
		if o.gvr == gvrDeployments {
			dep = o
		}
	}
	if dep.name == "" {
		return r, fmt.Errorf("no Deployment in syncer-gen's manifest %s", manifest)
	}
	r.id = dep.name
	if c != nil {
		if err := b.waitObjects(ctx, c, dep, 30*time.Minute); err != nil {
			return r, err
		}
		logf("podmemory: %d objects at the edge %.1fs after the manifest was applied", w.n, time.Since(start).Seconds())
	}
	pod, err := b.waitPodReady(ctx, dep, 10*time.Minute)
	if err != nil {
		return r, err
	}
	metrics := func() (map[string]float64, error) {
		return scrape("http://"+net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(bootstrap.MetricsPort))+"/metrics", &http.Client{Timeout: 5 * time.Second})
	}
	if err := support.WaitSettled(ctx, metrics, 2*time.Second, 5*time.Minute); err != nil {
		return r, fmt.Errorf("pod %s/%s: %w; %s", pod.Namespace, pod.Name, err, b.podState(ctx, dep))
	}
	if b.cfg.memoryAge > 0 {
		logf("podmemory: letting the syncer run for %s", b.cfg.memoryAge)
		select {
		case <-time.After(b.cfg.memoryAge):
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	settled := time.Now()
	if r.workingSet, r.rss, err = b.kubeletMemory(ctx, pod, settled); err != nil {
		return r, err
	}
	if m, err := metrics(); err == nil {
		r.heap, r.processRSS, r.goLimit = m["go_memstats_heap_inuse_bytes{}"], m["process_resident_memory_bytes{}"], m["go_gc_gomemlimit_bytes{}"]
	}
	cur, err := b.down.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return r, err
	}
	for _, ct := range cur.Spec.Containers {
		if ct.Name == bootstrap.ContainerName {
			r.limit = ct.Resources.Limits.Memory().AsApproximateFloat64()
			r.request = ct.Resources.Requests.Memory().AsApproximateFloat64()
		}
	}
	if r.limit == 0 {
		return r, fmt.Errorf("pod %s/%s: the syncer container has no memory limit", pod.Namespace, pod.Name)
	}
	r.restarts, r.lastState = containerRestarts(cur)
	logf("podmemory: %d objects: working set %.1f MiB, RSS %.1f MiB (kubelet); the syncer's own: RSS %.1f MiB, heap in use %.1f MiB, Go memory limit %.1f MiB; container limit %.0f MiB, restarts %d %s",
		w.n, r.workingSet/(1<<20), r.rss/(1<<20), r.processRSS/(1<<20), r.heap/(1<<20), r.goLimit/(1<<20), r.limit/(1<<20), r.restarts, r.lastState)
	return r, nil
}

// waitObjects waits until the counter has seen all its objects at the edge, failing early when the
// syncer's container has restarted three times (killed for memory, say) before they are there.
func (b *bench) waitObjects(ctx context.Context, c *counter, dep appliedObject, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, _, err := c.wait(ctx, 5*time.Second); err == nil || ctx.Err() != nil {
			return err
		}
		c.mu.Lock()
		seen := len(c.seen)
		c.mu.Unlock()
		if pods, err := b.podsOf(ctx, dep); err == nil && len(pods) == 1 {
			if restarts, _ := containerRestarts(&pods[0]); restarts >= 3 {
				return fmt.Errorf("%d of %d objects at the edge, and the syncer's container restarted %d times: %s", seen, c.n, restarts, b.podState(ctx, dep))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d objects at the edge after %v: %s", seen, c.n, timeout, b.podState(ctx, dep))
		}
	}
}

// syncerGen runs the plugin against the upstream, writing the edge manifest for a syncer expected to
// hold objects objects; its output goes to a log in the bench's folder.
func (b *bench) syncerGen(ctx context.Context, objects int, manifest string) error {
	logFile := strings.TrimSuffix(manifest, ".yaml") + ".syncer-gen.log"
	f, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer f.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, b.cfg.plugin, target, "--syncer-image", b.cfg.syncerImage,
		"--expected-objects", strconv.Itoa(objects), "-o", manifest, "--kubeconfig", b.env.Upstream.Kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(logFile)
		return fmt.Errorf("syncer-gen: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// podsOf lists the Deployment's pods not being deleted.
func (b *bench) podsOf(ctx context.Context, dep appliedObject) ([]corev1.Pod, error) {
	d, err := b.down.kube.AppsV1().Deployments(dep.namespace).Get(ctx, dep.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	list, err := b.down.kube.CoreV1().Pods(dep.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// waitPodReady waits until the Deployment has one pod, Ready (the kubelet has probed /readyz).
func (b *bench) waitPodReady(ctx context.Context, dep appliedObject, timeout time.Duration) (corev1.Pod, error) {
	var pod corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := b.podsOf(ctx, dep)
		if err != nil || len(pods) != 1 {
			return false, nil //nolint:nilerr // polled again until the timeout, which reports the pod's state
		}
		pod = pods[0]
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.Status.PodIP != "" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return pod, fmt.Errorf("the syncer's pod is not Ready within %v: %w; %s", timeout, err, b.podState(ctx, dep))
	}
	return pod, nil
}

// podState describes the Deployment's pods for an error message: phase, readiness, restarts and
// each container's state.
func (b *bench) podState(ctx context.Context, dep appliedObject) string {
	pods, err := b.podsOf(ctx, dep)
	if err != nil {
		return "pods: " + err.Error()
	}
	if len(pods) == 0 {
		return fmt.Sprintf("no pod of %s/%s", dep.namespace, dep.name)
	}
	var parts []string
	for _, p := range pods {
		restarts, last := containerRestarts(&p)
		s := fmt.Sprintf("pod %s: %s, restarts %d", p.Name, p.Status.Phase, restarts)
		if last != "" {
			s += ", last terminated: " + last
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				s += fmt.Sprintf(", waiting: %s %s", w.Reason, w.Message)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// containerRestarts is the syncer container's restart count and, if it has terminated before, how
// ("OOMKilled, exit code 137").
func containerRestarts(p *corev1.Pod) (int32, string) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != bootstrap.ContainerName {
			continue
		}
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = fmt.Sprintf("%s, exit code %d", t.Reason, t.ExitCode)
		}
		return cs.RestartCount, last
	}
	return 0, ""
}

// statsSummary is the part of the kubelet's Summary API (/stats/summary, k8s.io/kubelet's
// stats/v1alpha1) the scenario reads.
type statsSummary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			UID       string `json:"uid"`
		} `json:"podRef"`
		Containers []struct {
			Name   string `json:"name"`
			Memory *struct {
				Time            metav1.Time `json:"time"`
				WorkingSetBytes *uint64     `json:"workingSetBytes"`
				RSSBytes        *uint64     `json:"rssBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

// containerMemory finds a container's memory in a Summary API response: its working set and RSS
// and when they were sampled; ok is false when the summary has no such sample yet.
func containerMemory(data []byte, uid, container string) (workingSet, rss float64, at time.Time, ok bool, err error) {
	var s statsSummary
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, 0, time.Time{}, false, fmt.Errorf("the kubelet's summary: %w", err)
	}
	for _, p := range s.Pods {
		if p.PodRef.UID != uid {
			continue
		}
		for _, c := range p.Containers {
			if c.Name != container || c.Memory == nil || c.Memory.WorkingSetBytes == nil || c.Memory.RSSBytes == nil {
				continue
			}
			return float64(*c.Memory.WorkingSetBytes), float64(*c.Memory.RSSBytes), c.Memory.Time.Time, true, nil
		}
	}
	return 0, 0, time.Time{}, false, nil
}

// kubeletMemory reads the syncer container's working set and RSS from the kubelet's Summary API,
// through the edge apiserver's node proxy, from a sample taken after since (the kubelet samples
// every few seconds).
func (b *bench) kubeletMemory(ctx context.Context, pod corev1.Pod, since time.Time) (workingSet, rss float64, err error) {
	path := "/api/v1/nodes/" + pod.Spec.NodeName + "/proxy/stats/summary"
	last := errors.New("no sample of the container yet")
	perr := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		data, err := b.down.kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			last = err
			return false, nil //nolint:nilerr // asked again until the timeout, which reports this error
		}
		ws, r, at, ok, err := containerMemory(data, string(pod.UID), bootstrap.ContainerName)
		switch {
		case err != nil:
			return false, err
		case !ok:
			last = fmt.Errorf("no sample of container %s of pod %s/%s in the summary", bootstrap.ContainerName, pod.Namespace, pod.Name)
			return false, nil
		case at.Before(since):
			last = fmt.Errorf("the latest sample is from %s, before the syncer settled", at.Format(time.RFC3339))
			return false, nil
		}
		workingSet, rss = ws, r
		return true, nil
	})
	if perr != nil {
		return 0, 0, fmt.Errorf("GET %s: %w (%w)", path, perr, last)
	}
	return workingSet, rss, nil
}

// deletePodSyncer deletes what a round made at the edge: the syncer's namespace first (its Pod
// stops writing), then its cluster-scoped objects and the namespaces of the objects it synced.
func (b *bench) deletePodSyncer(ctx context.Context, applied []appliedObject, objectNamespaces []string) error {
	var namespaces []string
	for _, o := range applied {
		if o.gvr == gvrNamespaces {
			namespaces = append(namespaces, o.name)
		}
	}
	if err := deleteNamespaces(ctx, b.down, namespaces); err != nil {
		return err
	}
	for _, o := range applied {
		if o.namespace != "" || o.gvr == gvrNamespaces {
			continue
		}
		if err := b.down.dyn.Resource(o.gvr).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return deleteNamespaces(ctx, b.down, objectNamespaces)
}

// removeUpstreamIdentity deletes what syncer-gen made upstream for the bench's sync target: its
// ServiceAccount and token Secret (in syncer-gen's default namespace), ClusterRole and binding.
func (b *bench) removeUpstreamIdentity(id string) {
	ctx := context.Background()
	kube := b.up.kube
	var errs []error
	for _, del := range []func() error{
		func() error { return kube.CoreV1().Secrets("default").Delete(ctx, id+"-token", metav1.DeleteOptions{}) },
		func() error { return kube.CoreV1().ServiceAccounts("default").Delete(ctx, id, metav1.DeleteOptions{}) },
		func() error { return kube.RbacV1().ClusterRoleBindings().Delete(ctx, id, metav1.DeleteOptions{}) },
		func() error { return kube.RbacV1().ClusterRoles().Delete(ctx, id, metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		logf("podmemory: removing the syncer's identity upstream: %v", errors.Join(errs...))
	}
}
