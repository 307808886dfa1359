package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// cgroupRoot is where the container's cgroup files are (cgroup v2 mounts its own at the root, v1
// one folder per controller).
const cgroupRoot = "/sys/fs/cgroup"

// unlimited is the least limit taken for none: cgroup v1 writes the largest page-aligned int64.
const unlimited = int64(1) << 60

// containerMemoryLimit reads the memory limit of the container's cgroup under root: cgroup v2's
// memory.max, else v1's memory/memory.limit_in_bytes. 0 when there is none (no cgroup, "max", or
// v1's near-int64 value).
func containerMemoryLimit(root string) (int64, error) {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		text := strings.TrimSpace(string(data))
		if text == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", file, err)
		}
		if n >= unlimited {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// setMemoryLimit gives the Go runtime a soft memory limit of ratio times the container's (debug
// .SetMemoryLimit), so that the garbage collector works harder as the syncer nears it instead of the
// container being killed: a relist holds a second copy of a resource's objects for a moment. Nothing
// is set when GOMEMLIMIT is (the runtime read it), when ratio is 0, or without a container limit.
func setMemoryLimit(logger klog.Logger, root string, ratio float64) {
	if os.Getenv("GOMEMLIMIT") != "" || ratio <= 0 {
		return
	}
	limit, err := containerMemoryLimit(root)
	if err != nil {
		logger.Error(err, "Cannot read the container's memory limit; the Go runtime has none")
		return
	}
	if limit == 0 {
		return
	}
	soft := int64(float64(limit) * ratio)
	debug.SetMemoryLimit(soft)
	logger.Info("Go memory limit set from the container's", "containerLimit", limit, "goMemoryLimit", soft, "ratio", ratio)
}
