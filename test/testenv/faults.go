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
	name := APIServerProcess(s)
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
	if err := e.spawn(name, p.cmd.Path, args...); err != nil {
		return err
	}
	if err := e.writePIDs(); err != nil {
		return err
	}
	return e.waitReady(ctx, s, 60*time.Second)
}

// forget drops a process that was killed from the environment's list.
func (e *Env) forget(p *proc) {
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
