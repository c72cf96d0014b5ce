package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildVersion is what the binary knows of its own build: the module version, the VCS
// revision and time Go stamped into it, and the Go version. An operator reads it to tell
// which code a process runs; /metrics reports the same as switchboard_build_info.
type buildVersion struct {
	Module    string // module path
	Version   string // module version, "(devel)" for a build from a checkout
	Revision  string // VCS revision, "" when not stamped (go run, go test)
	Time      string // VCS commit time (RFC 3339), "" when not stamped
	Modified  bool   // the checkout had uncommitted changes
	GoVersion string
}

// readBuildVersion reads the build information embedded in the binary.
func readBuildVersion() buildVersion {
	v := buildVersion{GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Version = bi.Main.Path, bi.Main.Version
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// orUnknown names a missing field instead of printing an empty one.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func runVersion(_ context.Context, args []string, out io.Writer) error {
	f := newFlags("version")
	if err := f.parse(args); err != nil {
		return err
	}
	v := readBuildVersion()
	rev := orUnknown(v.Revision)
	if v.Modified {
		rev += " (modified)"
	}
	_, err := fmt.Fprintf(out, "module   %s\nversion  %s\nrevision %s\ntime     %s\ngo       %s\n",
		orUnknown(v.Module), orUnknown(v.Version), rev, orUnknown(v.Time), v.GoVersion)
	return err
}
