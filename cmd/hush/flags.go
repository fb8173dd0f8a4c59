package main

import (
	"errors"
	"flag"
	"io"
	"strings"
)

// parseFlags parses args into fs, allowing flags after positional arguments
// ("hush throttle status u-42 --json"), and returns the positional arguments.
// --help prints help to stdout and returns flag.ErrHelp (exit status 0); a
// bad flag is a usage error naming the command.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, help func(io.Writer)) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			help(stdout)
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, usageErrorf("%s: %s (run 'hush %s --help')", fs.Name(), err.Error(), fs.Name())
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

// printDefaults writes fs's flags to w.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
