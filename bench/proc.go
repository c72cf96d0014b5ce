package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// ProcStat is a reading of one process's CPU time and memory.
type ProcStat struct {
	CPU   time.Duration // user + system
	RSS   int64         // VmRSS, bytes
	HWM   int64         // VmHWM (peak RSS), bytes
	Valid bool
}

// ReadProc reads /proc/<pid>/stat and /proc/<pid>/status.
func ReadProc(pid int) ProcStat {
	var s ProcStat
	cpu, _, _, ok := procCPU(pid)
	if !ok {
		return s
	}
	s.CPU, s.Valid = cpu, true
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			s.RSS = kbField(line)
		case strings.HasPrefix(line, "VmHWM:"):
			s.HWM = kbField(line)
		}
	}
	return s
}

func kbField(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n << 10
}

// procCPU returns utime+stime of pid, the same of its children that exited and were
// waited for (cutime+cstime), and its parent pid.
func procCPU(pid int) (cpu, reaped time.Duration, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	var ticks [4]int64
	for k := range ticks {
		ticks[k], _ = strconv.ParseInt(f[11+k], 10, 64)
	}
	return time.Duration(ticks[0]+ticks[1]) * time.Second / clockTicks,
		time.Duration(ticks[2]+ticks[3]) * time.Second / clockTicks, ppid, true
}

// TreeCPU is the CPU time of pid, every live child of it and every child it has reaped
// (a PostgreSQL postmaster, its backends, and the backends and autovacuum workers that
// exited): the difference of two readings is what the tree spent in between.
func TreeCPU(pid int) time.Duration {
	cpu, reaped, _, ok := procCPU(pid)
	if !ok {
		return 0
	}
	total := cpu + reaped
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if cpu, reaped, ppid, ok := procCPU(child); ok && ppid == pid {
			total += cpu + reaped
		}
	}
	return total
}

// MachineCPU is the whole machine's CPU time from /proc/stat, in clock ticks. Since turns
// two readings into the shares of the interval between them that were busy (stolen
// included) and stolen by the hypervisor: on a shared machine, steal is the noise.
type MachineCPU struct {
	TotalTicks, BusyTicks, StolenTicks int64
	Busy, Stolen                       float64 // shares of TotalTicks (set by Since)
}

// ReadMachineCPU reads the machine's CPU time so far (zero when /proc/stat is unreadable).
func ReadMachineCPU() MachineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var m MachineCPU
	for i, v := range f[1:] {
		if i >= 8 { // guest time is counted in user already
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		m.TotalTicks += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			m.StolenTicks += n
			m.BusyTicks += n
		default:
			m.BusyTicks += n
		}
	}
	return m
}

// Since is the CPU time between an earlier reading m0 and m, with its busy and stolen shares.
func (m MachineCPU) Since(m0 MachineCPU) MachineCPU {
	d := MachineCPU{TotalTicks: m.TotalTicks - m0.TotalTicks, BusyTicks: m.BusyTicks - m0.BusyTicks,
		StolenTicks: m.StolenTicks - m0.StolenTicks}
	if d.TotalTicks > 0 {
		d.Busy, d.Stolen = float64(d.BusyTicks)/float64(d.TotalTicks), float64(d.StolenTicks)/float64(d.TotalTicks)
	}
	return d
}

// SelfCPU is the CPU time this process has used.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PostmasterPID reads the pid of the postmaster of a data directory.
func PostmasterPID(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// Machine describes the computer a run is on.
type Machine struct {
	CPUs      int
	Model     string
	MemTotal  int64
	GoVersion string
	Postgres  string
	Kernel    string
}

// DescribeMachine reads /proc for the processor and memory.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				m.MemTotal = kbField(line)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// RunQueueWait is the time the threads of pid have spent runnable but waiting for a core,
// summed over its live threads (the second field of /proc/<pid>/task/<tid>/schedstat): on
// a machine whose cores the load generator and PostgreSQL share with the server, the time
// a request waits with no core to run it, which the server's own code cannot remove. ok is
// false when the kernel does not keep these figures.
func RunQueueWait(pid int) (wait time.Duration, ok bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		if w, good := parseSchedstat(b); good {
			wait += w
			ok = true
		}
	}
	return wait, ok
}

// parseSchedstat reads the run-queue wait of one schedstat line: "<on cpu ns> <waiting ns>
// <timeslices>".
func parseSchedstat(b []byte) (time.Duration, bool) {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || ns < 0 {
		return 0, false
	}
	return time.Duration(ns), true
}
