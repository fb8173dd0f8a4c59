package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hushpush/hush/internal/suggest"
)

// parseFlags parses args into fs, allowing flags after positional arguments
// ("hush throttle status u-42 --json"), and returns the positional arguments.
// --help prints help (printHelp: the text, then fs's flags) to stdout and
// returns flag.ErrHelp (exit status 0); a bad flag is a usage error naming
// the command.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, help string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, help, fs)
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, usageErrorf("%s: %s%s (run 'hush %s --help')", fs.Name(), err.Error(), flagSuggestion(fs, err), fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// "--" ends the flags: everything after it is positional.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagSuggestion is ` (did you mean --x?)` when err is the flag package's
// unknown-flag error and a flag of fs is near the name (suggest.Nearest),
// else "". The flag package reports an unknown flag only in its message.
func flagSuggestion(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if best := suggest.Nearest(strings.TrimLeft(name, "-"), names); best != "" {
		return fmt.Sprintf(" (did you mean --%s?)", best)
	}
	return ""
}

// flagsOf adapts a command's flag set constructor, which parses into a *T,
// to the command table, which only needs the flags to list them.
func flagsOf[T any](newFlagSet func(*T) *flag.FlagSet) func() *flag.FlagSet {
	return func() *flag.FlagSet { return newFlagSet(new(T)) }
}

// noFlags is the flag set of a command that takes no flags (only --help).
func noFlags(name string) func() *flag.FlagSet {
	return func() *flag.FlagSet { return flag.NewFlagSet(name, flag.ContinueOnError) }
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
