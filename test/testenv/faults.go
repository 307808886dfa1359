package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// APIServerProcess is the name of the process serving s (for Signal and RestartAPIServer).
func APIServerProcess(s *Server) string { return "kube-apiserver-" + s.Name }

// PID is the process id of a process of the environment by name (APIServerProcess(s), "etcd"),
// for reading its CPU time and memory from /proc.
func (e *Env) PID(name string) (int, bool) {
	p := e.procByName(name)
	if p == nil {
		return 0, false
	}
	return p.pid, true
}

// Signal sends sig to a process of the environment by name: SIGSTOP hangs it (connections are
// accepted by the kernel, nothing answers), SIGCONT resumes it.
func (e *Env) Signal(name string, sig syscall.Signal) error {
	p := e.procByName(name)
	if p == nil {
		return fmt.Errorf("testenv: no process %q", name)
	}
	return syscall.Kill(p.pid, sig)
}

// RestartAPIServer kills s's kube-apiserver (SIGKILL, after a SIGCONT in case it was stopped) and
// starts it again with the same arguments; it returns once the new one answers /readyz. Its watch
// cache starts afresh, so a client resuming a watch from before may be told its resource version is
// too old (410 Gone).
func (e *Env) RestartAPIServer(ctx context.Context, s *Server) error {
	return e.RestartAPIServerAfter(ctx, s, 0)
}

// RestartAPIServerAfter is RestartAPIServer with the apiserver left down for a while between the
// kill and the start, as in a real outage: clients meanwhile have their connections refused.
func (e *Env) RestartAPIServerAfter(ctx context.Context, s *Server, down time.Duration) error {
	if err := e.restart(ctx, APIServerProcess(s), down); err != nil {
		return err
	}
	return e.waitReady(ctx, s, 60*time.Second)
}

// restart kills a process of the environment by name (SIGKILL, after a SIGCONT in case it was
// stopped), waits for it to die, leaves it down for a while and starts it again with the same
// arguments. The caller waits for it to be ready.
func (e *Env) restart(ctx context.Context, name string, down time.Duration) error {
	p := e.procByName(name)
	if p == nil {
		return fmt.Errorf("testenv: no process %q", name)
	}
	_ = syscall.Kill(p.pid, syscall.SIGCONT)
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for alive(p.pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	args := p.cmd.Args[1:]
	e.forget(p)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	if err := e.spawn(name, p.cmd.Path, args...); err != nil {
		return err
	}
	return e.writePIDs()
}

// forget drops a process that was killed from the environment's list.
func (e *Env) forget(p *proc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.procs[:0]
	for _, q := range e.procs {
		if q != p {
			kept = append(kept, q)
		}
	}
	e.procs = kept
}

// CompactEtcd compacts etcd's history up to its current revision (physically, like the
// kube-apiserver's periodic compaction but now), through etcd's JSON gateway: a watch from an older
// revision fails with "required revision has been compacted". It returns the revision.
func (e *Env) CompactEtcd(ctx context.Context) (int64, error) {
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any key will do: the header carries the current revision.
	if err := e.etcdPost(ctx, "/v3/kv/range", map[string]interface{}{"key": "Lw=="}, &rng); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("testenv: etcd revision %q: %w", rng.Header.Revision, err)
	}
	if err := e.etcdPost(ctx, "/v3/kv/compaction", map[string]interface{}{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

func (e *Env) etcdPost(ctx context.Context, path string, body, out interface{}) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.EtcdURL+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("testenv: etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return fmt.Errorf("testenv: etcd %s: %s: %s", path, resp.Status, msg.String())
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// RestartKCPAfter kills kcp (SIGKILL, after a SIGCONT in case it was stopped), leaves it down for a
// while, and starts it again with the same arguments and root directory; it returns once kcp answers
// /readyz. kcp's admin token changes at every start: the kubeconfigs written by KCP.WriteKubeconfig
// are written again with the new one (clients made from the old ones are refused from then on).
func (e *Env) RestartKCPAfter(ctx context.Context, down time.Duration) error {
	if e.KCP == nil {
		return fmt.Errorf("testenv: no kcp running")
	}
	if err := e.restart(ctx, "kcp", down); err != nil {
		return err
	}
	if err := e.waitKCP(ctx, time.Now()); err != nil {
		return err
	}
	for file, path := range e.KCP.kubeconfigs {
		if err := e.KCP.WriteKubeconfig(file, path); err != nil {
			return err
		}
	}
	return nil
}
