package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// initdb creates the cluster in the data directory, its postgresql.conf
// including the settings file that every start rewrites.
func (c *Cluster) initdb(ctx context.Context) error {
	// A directory left by an initdb that did not finish holds no cluster.
	if entries, err := os.ReadDir(c.dataDir); err == nil && len(entries) > 0 {
		c.log.Warn("removing incomplete postgres data directory", zap.String("data_dir", c.dataDir))
		if err := os.RemoveAll(c.dataDir); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	args := []string{"-D", c.dataDir, "-U", Superuser, "--auth=trust", "-E", "UTF8", "--locale=C"}
	if !c.opts.Fsync {
		args = append(args, "--no-sync")
	}
	began := time.Now()
	out, err := c.command(ctx, "initdb", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: initdb %s: %w\n%s", c.dataDir, err, tail(string(out), 4000))
	}
	conf := filepath.Join(c.dataDir, "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Written by switchboard: settings for this cluster, rewritten at every start.\ninclude_if_exists = '%s'\n", confFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.log.Info("postgres cluster created", zap.String("data_dir", c.dataDir), zap.String("bin_dir", c.binDir),
		zap.String("run_as", c.run.name), zap.Duration("took", time.Since(began)))
	return nil
}

// dataVersion is the major version of the cluster in dataDir, 0 when there is
// none.
func dataVersion(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return 0
	}
	return parseMajor(string(b))
}
