package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"
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

// The Makefile's build stamps these with -ldflags -X (make build): the VCS revision, its
// commit time (RFC 3339, UTC) and "true" when the checkout had uncommitted changes. They
// stand in for Go's own stamp where there is none (GOFLAGS=-buildvcs=false, which some
// environments set); a plain `go build` leaves them empty.
var stampRevision, stampTime, stampModified string

// readBuildVersion reads the build information embedded in the binary, and the Makefile's
// stamps when Go stamped no revision.
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
	if v.Revision == "" && stampRevision != "" {
		v.Revision, v.Time, v.Modified = stampRevision, stampTime, stampModified == "true"
		if v.Version == "" || v.Version == "(devel)" {
			v.Version = pseudoVersion(v.Revision, v.Time, v.Modified)
		}
	}
	return v
}

// pseudoVersion is the module version Go gives a build of an untagged commit:
// v0.0.0-<commit time, UTC, yyyymmddhhmmss>-<12 digits of the revision>, +dirty when the
// checkout was modified. "(devel)" when the time does not parse.
func pseudoVersion(revision, commitTime string, modified bool) string {
	t, err := time.Parse(time.RFC3339, commitTime)
	if err != nil || len(revision) < 12 {
		return "(devel)"
	}
	v := "v0.0.0-" + t.UTC().Format("20060102150405") + "-" + revision[:12]
	if modified {
		v += "+dirty"
	}
	return v
}

// short is the version and the revision's first 12 digits, as a serve process's heartbeat
// row (and the console's list of processes) shows them.
func (v buildVersion) short() string {
	s := v.Version
	if len(v.Revision) >= 12 {
		s += " " + v.Revision[:12]
	}
	return orUnknown(s)
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
