package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// readPidFile returns the lines of postmaster.pid.
func readPidFile(dataDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

// runningPostmaster returns the pid and port of the postmaster running on
// dataDir, if one does.
func runningPostmaster(dataDir string) (pid, port int, ok bool) {
	lines, err := readPidFile(dataDir)
	if err != nil || len(lines) < 4 {
		return 0, 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	if !processAlive(pid) {
		return 0, 0, false
	}
	port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	return pid, port, true
}

// processAlive reports whether pid is a live PostgreSQL process.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A stale pid file may name a pid reused by another program.
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		name := strings.TrimSpace(string(comm))
		if !strings.Contains(name, "postgres") && !strings.Contains(name, "postmaster") {
			return false
		}
	}
	// A zombie (exited, not yet reaped by its parent) is not running.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return true
}
