package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"k8s.io/klog/v2"
)

func TestContainerMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"cgroup v2", map[string]string{"memory.max": "402653184\n"}, 402653184},
		{"cgroup v2 without a limit", map[string]string{"memory.max": "max\n"}, 0},
		{"cgroup v1", map[string]string{"memory/memory.limit_in_bytes": "268435456\n"}, 268435456},
		{"cgroup v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"no cgroup files", nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range c.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := containerMemoryLimit(root)
			if err != nil || got != c.want {
				t.Errorf("containerMemoryLimit = %d, %v; want %d", got, err, c.want)
			}
		})
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("lots"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := containerMemoryLimit(root); err == nil {
		t.Error("an unreadable limit is not an error")
	}
}

func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	setMemoryLimit(klog.Background(), root, 0.9)
	if got := debug.SetMemoryLimit(-1); got != 900000000 {
		t.Errorf("memory limit = %d, want 900000000 (0.9 of the container's)", got)
	}
	debug.SetMemoryLimit(before)
	setMemoryLimit(klog.Background(), root, 0)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("ratio 0 set the memory limit to %d", got)
	}
	t.Setenv("GOMEMLIMIT", "512MiB")
	setMemoryLimit(klog.Background(), root, 0.9)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("a GOMEMLIMIT in the environment was overridden: %d", got)
	}
}
