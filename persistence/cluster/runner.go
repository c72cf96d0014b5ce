package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"go.uber.org/zap"
)

// runner is the user the server runs as: this process's own user, or, when
// this process is root, an unprivileged one.
type runner struct {
	name string
	uid  int
	gid  int
	cred *syscall.Credential // nil: run as this process's user
}

// chooseRunner picks the user to run the server as.
func chooseRunner(dataDir string) (runner, error) {
	if os.Geteuid() != 0 {
		u, _ := user.Current()
		name := strconv.Itoa(os.Geteuid())
		if u != nil {
			name = u.Username
		}
		return runner{name: name, uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	// Keep the owner of an existing data directory.
	if st, err := os.Stat(dataDir); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
			name := strconv.Itoa(int(sys.Uid))
			if u, err := user.LookupId(name); err == nil {
				name = u.Username
			}
			return newRunner(name, int(sys.Uid), int(sys.Gid)), nil
		}
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return newRunner(name, uid, gid), nil
	}
	return runner{}, errors.New("cluster: running as root, and neither user \"postgres\" nor \"nobody\" exists to run PostgreSQL as (it refuses to run as root)")
}

func newRunner(name string, uid, gid int) runner {
	return runner{name: name, uid: uid, gid: gid,
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
}

// chown gives path to the runner when it is another user.
func (r runner) chown(path string) {
	if r.cred != nil {
		_ = os.Lchown(path, r.uid, r.gid)
	}
}

// prepareDir makes c.dir usable by the runner: owned by it, and every parent
// directory traversable by it.
func (c *Cluster) prepareDir() error {
	if c.run.cred == nil {
		return nil
	}
	st, err := os.Stat(c.dir)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != c.run.uid || int(sys.Gid) != c.run.gid) {
		err := filepath.WalkDir(c.dir, func(path string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, c.run.uid, c.run.gid)
		})
		if err != nil {
			return fmt.Errorf("cluster: give %s to user %s: %w", c.dir, c.run.name, err)
		}
	}
	if err := os.Chmod(c.dir, 0o700); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for p := filepath.Dir(c.dir); ; p = filepath.Dir(p) {
		if err := c.makeTraversable(p); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// makeTraversable adds the search permission the runner needs on directory p.
func (c *Cluster) makeTraversable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	mode := st.Mode().Perm()
	var bit os.FileMode
	switch {
	case int(sys.Uid) == c.run.uid:
		bit = 0o100
	case int(sys.Gid) == c.run.gid:
		bit = 0o010
	default:
		bit = 0o001
	}
	if mode&bit != 0 {
		return nil
	}
	c.log.Warn("making directory traversable for the postgres server user",
		zap.String("path", p), zap.String("user", c.run.name),
		zap.String("old_mode", fmt.Sprintf("%#o", uint32(mode))), zap.String("new_mode", fmt.Sprintf("%#o", uint32(mode|bit))))
	if err := os.Chmod(p, mode|bit|st.Mode()&(os.ModeSticky|os.ModeSetgid|os.ModeSetuid)); err != nil {
		return fmt.Errorf("cluster: %s is not traversable by user %s, who runs PostgreSQL, and could not be made so (%w): choose a directory outside it", p, c.run.name, err)
	}
	return nil
}
