package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The node's network and its clean-up (see doc.go, "The node"). Every bed that runs a node takes a
// slot n (0..maxSlots-1), recorded in slotDir while the bed lives, and with it names and addresses that
// no other bed on the machine uses at the same time:
//
//	network namespace   kst-<n>  (the node: containerd, kubelet, kube-proxy, the pods' bridge)
//	veth pair           kst-<n>-h on the host, 10.213.255.<4n+1>/30 (the servers listen there)
//	                    kst-<n>-n in kst-<n>,  10.213.255.<4n+2>/30 (the node's IP)
//	pod network         10.213.<n>.0/24 on bridge kst0 in kst-<n>; the host routes it via the node
//	cgroups             /sys/fs/cgroup/<hierarchy>/kst-<n> (the kubelet's cgroupRoot)
//
// kst-<n> has no default route: pods and image pulls reach the pod network, the bed's address and
// the Service IPs (kube-proxy's rules, inside kst-<n>), nothing else, so no traffic leaves the machine.

const (
	slotPrefix = "kst-"
	maxSlots   = 64
	// slotDir holds one record a slot (slot-<n>.json) and the lock taken to sweep and allocate. /run
	// is emptied at boot, like the network namespaces and cgroups the records describe.
	slotDir = "/run/kubestellar-testenv"
	// cniResults is where libcni (in containerd) caches each attachment's result.
	cniResults = "/var/lib/cni/results"
)

// slotRecord is what a bed writes when it takes a slot: enough for a later start (or `make
// testenv-down`) to remove everything the slot's node made, whoever made it.
type slotRecord struct {
	Slot int `json:"slot"`
	// Dir is the bed's state folder: every process of the bed names it on its command line, and every
	// mount the node makes is under it.
	Dir string `json:"dir"`
	// OwnerPID and OwnerStart (its start time in clock ticks, /proc/<pid>/stat field 22) are the
	// process that started the bed: a slot is in use while it lives, before its servers run.
	OwnerPID   int    `json:"ownerPID"`
	OwnerStart uint64 `json:"ownerStart"`
}

func (r slotRecord) netns() string      { return slotPrefix + strconv.Itoa(r.Slot) }
func (r slotRecord) hostLink() string   { return r.netns() + "-h" }
func (r slotRecord) nodeLink() string   { return r.netns() + "-n" }
func (r slotRecord) cgroupRoot() string { return "/" + r.netns() }
func (r slotRecord) hostIP() string     { return fmt.Sprintf("10.213.255.%d", 4*r.Slot+1) }
func (r slotRecord) nodeIP() string     { return fmt.Sprintf("10.213.255.%d", 4*r.Slot+2) }
func (r slotRecord) podCIDR() string    { return fmt.Sprintf("10.213.%d.0/24", r.Slot) }

// cniNetwork is the name of the node's CNI network; libcni keeps its results in
// /var/lib/cni/results/<name>-<container>-<interface>.
func (r slotRecord) cniNetwork() string { return "testenv-" + r.netns() }

func slotFile(n int) string { return filepath.Join(slotDir, fmt.Sprintf("slot-%d.json", n)) }

// lockSlots takes the machine-wide lock under which slots are swept and taken.
func lockSlots() (unlock func(), err error) {
	if err := os.MkdirAll(slotDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(slotDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func readSlot(n int) (*slotRecord, error) {
	data, err := os.ReadFile(slotFile(n))
	if err != nil {
		return nil, err
	}
	var r slotRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", slotFile(n), err)
	}
	return &r, nil
}

// processStart is a process's start time in clock ticks since boot (0 if it is gone).
func processStart(pid int) uint64 {
	fields := procStat(pid)
	if len(fields) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(fields[19], 10, 64)
	return v
}

// processes lists the live processes other than this one for which match returns true.
func processes(match func(pid int) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != os.Getpid() && match(pid) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// named matches the processes whose command line contains dir and whose name (/proc/<pid>/comm,
// at most 15 characters) passes comm.
func named(dir string, comm func(string) bool) func(int) bool {
	return func(pid int) bool {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			return false
		}
		name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return comm(strings.TrimSpace(string(name)))
	}
}

// bedComms are the names (/proc/<pid>/comm, at most 15 characters) of the servers a bed runs. A
// containerd shim is not one: it outlives a killed bed.
var bedComms = []string{"etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kubelet", "kube-proxy", "kcp", "containerd"}

// live tells whether the bed of a record still runs: its owner lives, or one of its servers (a
// process of bedComms naming its folder).
func (r slotRecord) live() bool {
	if r.OwnerPID > 0 && processStart(r.OwnerPID) == r.OwnerStart && alive(r.OwnerPID) {
		return true
	}
	return r.Dir != "" && len(processes(named(r.Dir, func(comm string) bool { return indexOf(bedComms, comm) >= 0 }))) > 0
}

// takeSlot sweeps what dead beds left behind and records a free slot for dir.
func takeSlot(dir string, logf func(string, ...any)) (*slotRecord, error) {
	unlock, err := lockSlots()
	if err != nil {
		return nil, fmt.Errorf("testenv: node slots in %s (the node needs root): %w", slotDir, err)
	}
	defer unlock()
	used := sweepSlots(logf)
	taken := hostAddresses()
	for n := 0; n < maxSlots; n++ {
		r := &slotRecord{Slot: n, Dir: dir, OwnerPID: os.Getpid(), OwnerStart: processStart(os.Getpid())}
		if used[n] || taken[r.hostIP()] || taken[r.nodeIP()] || routeExists(r.podCIDR()) {
			continue
		}
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(slotFile(n), data, 0o600); err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("testenv: all %d node slots are in use (see %s)", maxSlots, slotDir)
}

// sweepSlots removes what every dead bed's slot left behind, and anything named kst-<n> that no
// record claims (a bed killed while it took its slot); it returns the slots still in use. The caller
// holds the lock.
func sweepSlots(logf func(string, ...any)) map[int]bool {
	used := map[int]bool{}
	for n := 0; n < maxSlots; n++ {
		r, err := readSlot(n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil && r.live() {
			used[n] = true
			continue
		}
		if err != nil { // unreadable: a bed killed while writing it
			r = &slotRecord{Slot: n}
		}
		logf("testenv: sweeping node slot %d left by a stopped bed (%s)", n, r.Dir)
		if err := teardownSlot(r); err != nil {
			logf("testenv: sweeping node slot %d: %v", n, err)
			used[n] = true // keep off it
			continue
		}
	}
	// Orphans: named like a slot, with no record.
	orphan := func(name string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(name, slotPrefix), "-h"), "-n"))
		if !strings.HasPrefix(name, slotPrefix) || err != nil || used[n] {
			return 0, false
		}
		_, err = os.Stat(slotFile(n))
		return n, errors.Is(err, os.ErrNotExist)
	}
	names := map[int]bool{}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if n, ok := orphan(e.Name()); ok {
				names[n] = true
			}
		}
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if n, ok := orphan(i.Name); ok {
				names[n] = true
			}
		}
	}
	for _, h := range cgroupHierarchies() {
		if entries, err := os.ReadDir(h); err == nil {
			for _, e := range entries {
				if n, ok := orphan(e.Name()); ok && e.IsDir() {
					names[n] = true
				}
			}
		}
	}
	for n := range names {
		logf("testenv: sweeping kst-%d, which no bed records", n)
		if err := teardownSlot(&slotRecord{Slot: n}); err != nil {
			logf("testenv: sweeping kst-%d: %v", n, err)
		}
	}
	return used
}

// hostAddresses are the IPv4 addresses of this machine's interfaces.
func hostAddresses() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			out[ipn.IP.String()] = true
		}
	}
	return out
}

// routeExists tells whether the host has a route to exactly cidr (another bed's pods, or anything).
func routeExists(cidr string) bool {
	out, err := exec.Command("ip", "-4", "route", "show", "exact", cidr).Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// run runs a command, its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setUpNetwork makes the slot's network namespace, veth pair, addresses and host route, and the
// kst-<n> cgroups the kubelet's cgroupRoot names.
func setUpNetwork(r *slotRecord) error {
	ns := r.netns()
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", r.hostLink(), "type", "veth", "peer", "name", r.nodeLink(), "netns", ns},
		{"ip", "addr", "add", r.hostIP() + "/30", "dev", r.hostLink()},
		{"ip", "link", "set", r.hostLink(), "up"},
		{"ip", "-n", ns, "addr", "add", r.nodeIP() + "/30", "dev", r.nodeLink()},
		{"ip", "-n", ns, "link", "set", r.nodeLink(), "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "route", "add", r.podCIDR(), "via", r.nodeIP(), "dev", r.hostLink()},
		// The Services, for the node's own processes (and hostNetwork pods): a route to choose before
		// kube-proxy's DNAT in OUTPUT. Not a default route: an address no rule rewrites goes nowhere.
		{"ip", "-n", ns, "route", "add", serviceCIDR, "dev", r.nodeLink()},
		// Forwarding between the pods' bridge and the veth, inside kst-<n> only; bridged pod-to-pod
		// traffic through a Service goes through iptables (kube-proxy's rules) as on any node.
		{"ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return fmt.Errorf("testenv: node network: %w", err)
		}
	}
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, r.netns())
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("testenv: node cgroup: %w", err)
		}
		if filepath.Base(h) == "cpuset" { // a v1 cpuset cgroup starts with no CPUs and no memory nodes
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("testenv: node cgroup %s: %w", f, err)
				}
			}
		}
	}
	return nil
}

// cgroupHierarchies are the cgroup mounts under /sys/fs/cgroup (one a controller on cgroup v1, and
// the unified one; or /sys/fs/cgroup itself on a pure cgroup v2 machine).
func cgroupHierarchies() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		sep := indexOf(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; (t == "cgroup" || t == "cgroup2") && strings.HasPrefix(fields[4], "/sys/fs/cgroup") {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out
}

func indexOf(ss []string, s string) int {
	for i, v := range ss {
		if v == s {
			return i
		}
	}
	return -1
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder lists the mount points at or under dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || dir == "" {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		if mp := unescapeMount(fields[4]); mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// teardownSlot removes everything a slot's node made, in an order that leaves nothing busy: the
// processes (the containers in the slot's cgroups, the containerd shims naming the bed's folder and
// whatever runs in kst-<n>), the mounts under the folder (lazily), the network namespaces (kst-<n>, and with it the
// veth pair, the bridge, kube-proxy's and the CNI's iptables rules and the host route; the pods'
// namespaces are mounts under the folder), the cgroups, libcni's cached results and the kubelet's
// links in /var/log/containers, and last the record. The bed's servers are stopped by the caller.
func teardownSlot(r *slotRecord) error {
	var errs []error
	hierarchies := cgroupHierarchies()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var pids []int
		for _, h := range hierarchies {
			pids = append(pids, cgroupProcs(filepath.Join(h, r.netns()))...)
		}
		if r.Dir != "" {
			pids = append(pids, processes(named(r.Dir, func(comm string) bool { return strings.HasPrefix(comm, "containerd-shim") }))...)
		}
		pids = append(pids, netnsProcs(r.netns())...)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("processes %v of node slot %d survive SIGKILL", pids, r.Slot))
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, mp := range mountsUnder(r.Dir) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", r.netns())); err == nil {
		if err := run("ip", "netns", "delete", r.netns()); err != nil {
			errs = append(errs, err)
		}
	}
	// The kernel destroys a namespace, and with it the veth pair, a moment after its last reference
	// goes; the host's end is deleted by hand only if it stays (its namespace was already gone).
	for linkDeadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := net.InterfaceByName(r.hostLink()); err != nil {
			break
		}
		if time.Now().After(linkDeadline) {
			if err := run("ip", "link", "delete", r.hostLink()); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
				errs = append(errs, err)
			}
			break
		}
	}
	for _, h := range hierarchies {
		if err := removeCgroupTree(filepath.Join(h, r.netns()), time.Now().Add(5*time.Second)); err != nil {
			errs = append(errs, err)
		}
	}
	// libcni's cached results: <network>-<sandbox>-<interface>, for the pods' network and containerd's
	// loopback one (the sandboxes are those containerd recorded under the bed's folder).
	results, _ := filepath.Glob(filepath.Join(cniResults, r.cniNetwork()+"-*"))
	if r.Dir != "" {
		sandboxes, _ := os.ReadDir(filepath.Join(r.Dir, "node", "containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes"))
		for _, sb := range sandboxes {
			results = append(results, filepath.Join(cniResults, "cni-loopback-"+sb.Name()+"-lo"))
		}
	}
	for _, f := range results {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if r.Dir != "" {
		if links, err := filepath.Glob("/var/log/containers/*.log"); err == nil {
			for _, l := range links {
				if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, r.Dir+"/") {
					_ = os.Remove(l)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(slotFile(r.Slot)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// cgroupProcs lists the processes in a cgroup and every cgroup below it.
func cgroupProcs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs")) // gone meanwhile: none
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return nil // a cgroup removed meanwhile: go on
	})
	return pids
}

// netnsProcs lists the processes in the named network namespace.
func netnsProcs(name string) []int {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", name), &want); err != nil {
		return nil
	}
	return processes(func(pid int) bool {
		var st syscall.Stat_t
		return syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev
	})
}

// removeCgroupTree removes a cgroup and every cgroup below it, deepest first, retrying while the
// kernel still counts a killed process in one.
func removeCgroupTree(dir string, deadline time.Time) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("removing cgroup %s: %w", d, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
