package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set at build time: go build -ldflags "-X main.version=v1.2.0 -X main.commit=abc123".
// They are never written at run time.
var (
	version string
	commit  string
)

// versionHelp is the help of hush version, which takes no flags.
const versionHelp = `Usage: hush version

Prints the version, the commit it was built from and the Go version.
`

func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	pos, err := parseFlags(noFlags("version")(), args, stdout, versionHelp)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("version takes no arguments, got %q", pos)
	}
	fmt.Fprintln(stdout, versionString(version, commit))
	return nil
}

// versionString describes this build: the -ldflags values when set, else what
// the Go toolchain recorded (module version, VCS revision and dirty flag).
func versionString(v, c string) string {
	fromVCS, modified := false, false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" || c == "unknown" {
					c, fromVCS = s.Value, true
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	if len(c) > 12 {
		c = c[:12]
	}
	if fromVCS && modified {
		c += "+dirty"
	}
	return fmt.Sprintf("hush %s (commit %s, %s %s/%s)", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
