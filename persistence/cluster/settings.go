package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// writeConf writes the settings file included by postgresql.conf.
func (c *Cluster) writeConf() error {
	settings := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    strconv.Itoa(c.port),
		"unix_socket_directories": "",
	}
	if len(c.dir)+len("/.s.PGSQL.65535.lock") <= maxSocketPath {
		settings["unix_socket_directories"] = c.dir
	}
	if !c.opts.Fsync {
		settings["fsync"] = "off"
		settings["synchronous_commit"] = "off"
		settings["full_page_writes"] = "off"
	}
	for k, v := range c.opts.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		if !validSettingName(k) {
			return fmt.Errorf("cluster: invalid setting name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by switchboard at every start; edits are overwritten.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(settings[k], "'", "''"))
	}
	path := filepath.Join(c.dataDir, confFile)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("cluster: write settings: %w", err)
	}
	c.run.chown(path)
	return nil
}

// validSettingName reports whether k can name a server setting.
func validSettingName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
