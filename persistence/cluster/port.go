package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// startOnFreePort starts the server on Options.Port, else on the port of the
// last start when it is free, else on a free port, choosing another when a
// chosen one is taken before the server binds it.
func (c *Cluster) startOnFreePort(ctx context.Context) error {
	port, auto := c.opts.Port, false
	if port == 0 {
		port = readPortFile(c.dir)
		if port != 0 && !portFree(port) {
			c.log.Warn("postgres cluster port taken by another process, choosing another", zap.Int("port", port))
			port = 0
		}
	}
	for attempt := 1; ; attempt++ {
		if port == 0 {
			var err error
			if port, err = freePort(); err != nil {
				return fmt.Errorf("cluster: choose a port: %w", err)
			}
			auto = true
		}
		c.port = port
		err := c.start(ctx)
		if err == nil {
			return nil
		}
		// Another process may have bound the port between freePort and the
		// server's bind: choose another one.
		if auto && attempt < 5 && errors.Is(err, errPortInUse) {
			c.log.Warn("postgres cluster port taken meanwhile, choosing another", zap.Int("port", port))
			port = 0
			continue
		}
		return err
	}
}

// readPortFile returns the port recorded in dir by the last start, 0 when none.
func readPortFile(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, portFile))
	if err != nil {
		return 0
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || p <= 0 || p > 65535 {
		return 0
	}
	return p
}

// writePortFile records the cluster's port in its directory for the next start.
func (c *Cluster) writePortFile() {
	path := filepath.Join(c.dir, portFile)
	if err := os.WriteFile(path, []byte(strconv.Itoa(c.Port())+"\n"), 0o644); err != nil {
		c.log.Warn("could not record postgres cluster port", zap.Error(err))
		return
	}
	c.run.chown(path)
}

// freePort returns a TCP port free at the moment on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether port can be bound on 127.0.0.1.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
