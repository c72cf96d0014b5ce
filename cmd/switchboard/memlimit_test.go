package main

import (
	"io/fs"
	"math"
	"runtime/debug"
	"testing"

	"go.uber.org/zap"
)

func TestMemoryLimit(t *testing.T) {
	const gib int64 = 1 << 30
	meminfo := "MemTotal:       25165824 kB\nMemFree:         1000 kB\n" // 24 GiB
	for _, tc := range []struct {
		name       string
		flag, env  string
		files      map[string]string
		want       int64
		wantSource string
		wantErr    bool
	}{
		{name: "machine memory", files: map[string]string{procMeminfo: meminfo},
			want: share(24 * gib), wantSource: "80% of MemTotal"},
		{name: "cgroup v2 limit", files: map[string]string{cgroupV2MemoryMax: "4294967296\n", procMeminfo: meminfo},
			want: share(4 * gib), wantSource: "80% of the cgroup memory limit"},
		{name: "cgroup v2 max is none", files: map[string]string{cgroupV2MemoryMax: "max\n", procMeminfo: meminfo},
			want: share(24 * gib), wantSource: "80% of MemTotal"},
		{name: "cgroup v2 above the machine", files: map[string]string{cgroupV2MemoryMax: "68719476736", procMeminfo: meminfo},
			want: share(24 * gib), wantSource: "80% of MemTotal"},
		{name: "cgroup v1 limit", files: map[string]string{cgroupV1Limit: "2147483648\n", procMeminfo: meminfo},
			want: share(2 * gib), wantSource: "80% of the cgroup memory limit"},
		{name: "cgroup v1 unlimited", files: map[string]string{cgroupV1Limit: "9223372036854771712\n", procMeminfo: meminfo},
			want: share(24 * gib), wantSource: "80% of MemTotal"},
		{name: "cgroup only", files: map[string]string{cgroupV2MemoryMax: "1073741824"},
			want: share(gib), wantSource: "80% of the cgroup memory limit"},
		{name: "garbled meminfo", files: map[string]string{procMeminfo: "MemTotal: lots kB\n"},
			want: math.MaxInt64, wantSource: "none found (no cgroup limit, no /proc/meminfo)"},
		{name: "nothing readable", want: math.MaxInt64, wantSource: "none found (no cgroup limit, no /proc/meminfo)"},
		{name: "flag wins over the cgroup", flag: "3GiB", files: map[string]string{cgroupV2MemoryMax: "1073741824"},
			want: 3 * gib, wantSource: "--memory-limit"},
		{name: "flag in bytes", flag: "1000000", want: 1000000, wantSource: "--memory-limit"},
		{name: "flag MiB", flag: " 512MiB ", want: 512 << 20, wantSource: "--memory-limit"},
		{name: "flag off", flag: "off", files: map[string]string{procMeminfo: meminfo}, want: math.MaxInt64, wantSource: "--memory-limit off"},
		{name: "flag garbled", flag: "3GB", wantErr: true},
		{name: "flag negative", flag: "-1GiB", wantErr: true},
		{name: "flag zero", flag: "0", wantErr: true},
		{name: "flag overflows", flag: "9000000000TiB", wantErr: true},
		{name: "GOMEMLIMIT wins over the flag", env: "2GiB", flag: "3GiB", wantSource: "GOMEMLIMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(path string) ([]byte, error) {
				if s, ok := tc.files[path]; ok {
					return []byte(s), nil
				}
				return nil, fs.ErrNotExist
			}
			got, source, err := memoryLimit(tc.flag, tc.env, read)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("memoryLimit(%q) = %d, %q; want an error", tc.flag, got, source)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if source != tc.wantSource {
				t.Errorf("source %q, want %q", source, tc.wantSource)
			}
			if tc.env == "" && got != tc.want {
				t.Errorf("limit %d, want %d", got, tc.want)
			}
		})
	}
}

// share is memoryLimitShare of n bytes, as memoryLimit computes it.
func share(n int64) int64 { return int64(float64(n) * memoryLimitShare) }

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"3GiB", "512MiB", "1", "0", "-1", "1TiB", "9000000000TiB", "B", "1KiBB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseByteSize(s)
		if err == nil && n <= 0 {
			t.Fatalf("parseByteSize(%q) = %d without error", s, n)
		}
	})
}

// The answer cache is sized for the memory limit: 1/32 of it, 64 MiB at most, the
// supply default when there is no limit.
func TestAnswerCacheBytes(t *testing.T) {
	for _, tc := range []struct{ limit, want int64 }{
		{math.MaxInt64, 0},
		{0, 0},
		{1 << 30, 32 << 20},
		{900 << 20, 900 << 15},
		{3 << 30, 64 << 20},
	} {
		if got := answerCacheBytes(tc.limit); got != tc.want {
			t.Errorf("answerCacheBytes(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// --gc-percent sets the collector's percentage unless GOGC is set, which wins.
func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	applyGCPercent(37, zap.NewNop())
	if got := debug.SetGCPercent(100); got != 37 {
		t.Errorf("GC percent %d after --gc-percent 37, want 37", got)
	}
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // as the runtime would have at start
	applyGCPercent(defaultGCPercent, zap.NewNop())
	if got := debug.SetGCPercent(100); got != 80 {
		t.Errorf("GC percent %d with GOGC=80, want 80", got)
	}
}
