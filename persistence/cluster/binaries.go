package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// debianRoot is where Debian and Ubuntu install one directory of server binaries
// per PostgreSQL major version (/usr/lib/postgresql/15/bin, ...).
const debianRoot = "/usr/lib/postgresql"

// installMu serialises package installs within one process.
var installMu sync.Mutex

// binSet is one directory holding initdb, pg_ctl and postgres, with the
// major version of those binaries.
type binSet struct {
	dir   string
	major int
}

// FindBinaries returns the directory holding the PostgreSQL server binaries
// (initdb, pg_ctl, postgres): the one of pg_ctl found in PATH, else the newest
// /usr/lib/postgresql/*/bin. When none is found and the process runs as root,
// it installs the Debian package "postgresql" and looks again.
func FindBinaries(ctx context.Context, log *zap.Logger) (string, error) {
	b, err := findBinaries(ctx, log, 0)
	if err != nil {
		return "", err
	}
	return b.dir, nil
}

// findBinaries looks for the server binaries, preferring major version want
// when it is not 0 (the version of an existing data directory).
func findBinaries(ctx context.Context, log *zap.Logger, want int) (binSet, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if b, ok := lookBinaries(ctx, want); ok {
		return b, nil
	}
	if os.Geteuid() != 0 {
		return binSet{}, errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in PATH nor in " +
			debianRoot + "/*/bin; install them (Debian/Ubuntu: sudo apt-get install postgresql) " +
			"or point the service at an existing server with DATABASE_URL (tests: TEST_DATABASE_URL)")
	}
	if err := installPostgres(ctx, log); err != nil {
		return binSet{}, err
	}
	if b, ok := lookBinaries(ctx, want); ok {
		return b, nil
	}
	return binSet{}, errors.New("PostgreSQL server binaries still not found after installing the postgresql package")
}

// lookBinaries returns the preferred binary set present on this machine.
func lookBinaries(ctx context.Context, want int) (binSet, bool) {
	var cands []binSet
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if complete(dir) {
			cands = append(cands, binSet{dir: dir, major: majorOf(ctx, dir)})
		}
	}
	cands = append(cands, debianBinaries()...)
	if len(cands) == 0 {
		return binSet{}, false
	}
	if want != 0 {
		for _, c := range cands {
			if c.major == want {
				return c, true
			}
		}
	}
	return cands[0], true
}

// debianBinaries lists /usr/lib/postgresql/*/bin, newest major version first.
func debianBinaries() []binSet {
	entries, err := os.ReadDir(debianRoot)
	if err != nil {
		return nil
	}
	var out []binSet
	for _, e := range entries {
		dir := filepath.Join(debianRoot, e.Name(), "bin")
		if !complete(dir) {
			continue
		}
		out = append(out, binSet{dir: dir, major: parseMajor(e.Name())})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].major > out[j].major })
	return out
}

// complete reports whether dir holds every server binary this package runs.
func complete(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// majorOf returns the major version of the binaries in dir: from a Debian path
// when it is one, else from "postgres --version".
func majorOf(ctx context.Context, dir string) int {
	if rest, ok := strings.CutPrefix(dir, debianRoot+"/"); ok {
		if v := parseMajor(strings.TrimSuffix(rest, "/bin")); v != 0 {
			return v
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return 0
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return 0
	}
	return parseMajor(string(m[1]))
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\)\s+([0-9]+(?:\.[0-9]+)?)`)

// parseMajor turns "15", "15.8" or "9.6" into a comparable major version
// (15, 15, 906); 0 when s is not a version.
func parseMajor(s string) int {
	parts := strings.SplitN(strings.TrimSpace(s), ".", 3)
	a, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0
	}
	if a >= 10 || len(parts) < 2 {
		return a
	}
	b, _ := strconv.Atoi(parts[1])
	return a*100 + b
}

// installPostgres installs the Debian package "postgresql" (root only).
func installPostgres(ctx context.Context, log *zap.Logger) error {
	installMu.Lock()
	defer installMu.Unlock()
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("PostgreSQL server binaries not found and apt-get is not available: install PostgreSQL (initdb, pg_ctl, postgres) with the system package manager")
	}
	log.Info("installing postgresql server package", zap.String("command", "apt-get install -y postgresql"))
	steps := [][]string{
		{"apt-get", "update"},
		{"apt-get", "install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=600", "postgresql"},
	}
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 4000))
		}
	}
	log.Info("installed postgresql server package")
	return nil
}

// tail returns at most the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
