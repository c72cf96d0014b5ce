package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Where serve looks for the memory it may use: the cgroup's limit (v2, then v1) and,
// without one, the machine's memory.
const (
	cgroupV2MemoryMax = "/sys/fs/cgroup/memory.max"
	cgroupV1Limit     = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	procMeminfo       = "/proc/meminfo"
)

// memoryLimitShare is the share of the available memory the Go runtime aims to stay under
// when --memory-limit is not given: the rest is for what the runtime does not count
// (stacks of threads in C, the kernel's page cache of the process, fragmentation) and
// headroom before the kernel's OOM killer.
const memoryLimitShare = 0.8

// unlimitedCgroup is the smallest cgroup v1 limit read as "no limit": v1 reports an
// unlimited cgroup as the largest page-aligned int64 (9223372036854771712).
const unlimitedCgroup = 1 << 60

// memoryLimit is the soft memory limit serve sets for the Go runtime, and where it came
// from. Without it, the garbage collector lets the heap grow to twice the live heap
// (GOGC=100), which at 100k campaigns and 1M participants is more than the machine has
// (docs/performance.md). The order: GOMEMLIMIT in the environment (the runtime applied it
// already; nothing is changed), then --memory-limit (a size such as 3GiB, or "off"), then
// 80% of the cgroup's memory limit, then 80% of the machine's memory. read reads a file
// (os.ReadFile, or a table of contents in tests).
func memoryLimit(flag, gomemlimit string, read func(string) ([]byte, error)) (limit int64, source string, err error) {
	if gomemlimit != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil
	}
	switch strings.TrimSpace(flag) {
	case "":
	case "off":
		return math.MaxInt64, "--memory-limit off", nil
	default:
		n, err := parseByteSize(flag)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit: %w", err)
		}
		return n, "--memory-limit", nil
	}
	total, haveTotal := memTotal(read)
	if c, ok := cgroupLimit(read); ok && (!haveTotal || c < total) {
		return int64(float64(c) * memoryLimitShare), "80% of the cgroup memory limit", nil
	}
	if haveTotal {
		return int64(float64(total) * memoryLimitShare), "80% of MemTotal", nil
	}
	return math.MaxInt64, "none found (no cgroup limit, no /proc/meminfo)", nil
}

// cgroupLimit reads the cgroup's memory limit: v2 memory.max ("max" is none), else the v1
// memory.limit_in_bytes (a huge value is none).
func cgroupLimit(read func(string) ([]byte, error)) (int64, bool) {
	if b, err := read(cgroupV2MemoryMax); err == nil {
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil && n > 0
	}
	if b, err := read(cgroupV1Limit); err == nil {
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil && n > 0 && n < unlimitedCgroup
	}
	return 0, false
}

// memTotal reads MemTotal from /proc/meminfo ("MemTotal:  24685612 kB").
func memTotal(read func(string) ([]byte, error)) (int64, bool) {
	b, err := read(procMeminfo)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt64>>10 {
			return 0, false
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		return n, true
	}
	return 0, false
}

var byteUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseByteSize parses a size as GOMEMLIMIT writes it: an integer with an optional unit B,
// KiB, MiB, GiB or TiB (no unit: bytes).
func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, shift := s, uint(0)
	for _, u := range byteUnits {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = v, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive size such as 3GiB, 512MiB or a number of bytes, or off")
	}
	if n > math.MaxInt64>>shift {
		return 0, errors.New("size too large")
	}
	return n << shift, nil
}

// defaultGCPercent is serve's GOGC when neither GOGC nor --gc-percent sets one. Nearly all
// of serve's heap is long-lived (the campaign index, the panel) and the offers path
// allocates nothing, so collections are rare whatever the percentage; what it sets is the
// peak: the runtime lets the heap grow to (1 + GOGC/100) × the live heap before collecting,
// so 50 instead of Go's 100 takes a quarter off the peak (at 100k campaigns and 1M
// participants, 949 MiB instead of 1,137 MiB of RSS once loaded, docs/performance.md).
const defaultGCPercent = 50

// applyGCPercent sets the garbage collector's percentage to pct, unless GOGC is set (the
// runtime applied it already), and logs it.
func applyGCPercent(pct int, log *zap.Logger) {
	if v := os.Getenv("GOGC"); v != "" {
		if pct != defaultGCPercent {
			log.Warn("GOGC is set: --gc-percent ignored")
		}
		log.Info("garbage collector", zap.String("gogc", v), zap.String("source", "GOGC"))
		return
	}
	debug.SetGCPercent(pct)
	log.Info("garbage collector", zap.Int("gogc", pct))
}

// answerCacheShare is the most of the memory limit the offers answer cache may take (it is
// 64 MiB at most, supply.Config.CacheMaxBytes's default): a process given 1 GiB keeps 32 MiB
// of answers.
const answerCacheShare = 32

// answerCacheBytes is the answer cache's bound under the memory limit (0: the default).
func answerCacheBytes(limit int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return 0
	}
	return min(64<<20, limit/answerCacheShare)
}

// applyMemoryLimit sets the runtime's soft memory limit as memoryLimit decides, logs it and
// returns it (math.MaxInt64: none).
func applyMemoryLimit(flag string, log *zap.Logger) (int64, error) {
	limit, source, err := memoryLimit(flag, os.Getenv("GOMEMLIMIT"), os.ReadFile)
	if err != nil {
		return 0, err
	}
	if source != "GOMEMLIMIT" {
		debug.SetMemoryLimit(limit)
	} else if flag != "" {
		log.Warn("GOMEMLIMIT is set: --memory-limit ignored")
	}
	if limit == math.MaxInt64 {
		log.Info("memory limit", zap.String("limit", "none"), zap.String("source", source))
		return limit, nil
	}
	log.Info("memory limit", zap.Int64("bytes", limit), zap.String("limit", fmt.Sprintf("%.0f MiB", float64(limit)/(1<<20))),
		zap.String("source", source))
	return limit, nil
}
