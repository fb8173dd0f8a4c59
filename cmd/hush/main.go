package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr and maps it to the process exit status:
// 0 on success or after an explicit --help, 2 for usage errors, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	}
	// An error may carry a server's message: printable keeps its control
	// characters from reaching the terminal.
	fmt.Fprintln(printable{stderr}, "hush:", err)
	if _, ok := errors.AsType[*usageError](err); ok {
		return 2
	}
	return 1
}

// run executes one hush command line (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stderr)
		return usageErrorf("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return nil
	case "help":
		return runHelp(ctx, rest, stdout, stderr)
	case "-version", "--version":
		return runVersion(ctx, rest, stdout, stderr)
	}
	cmd, ok := findCommand(commands(), name)
	if !ok {
		return usageErrorf("unknown command %q%s; run 'hush help' for the list", name, didYouMean(name, commands()))
	}
	return cmd.run(ctx, rest, stdout, stderr)
}

// runHelp is "hush help [command]".
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stdout)
		return nil
	}
	cmd, ok := findCommand(commands(), args[0])
	if !ok {
		return usageErrorf("help: unknown command %q%s; run 'hush help' for the list", args[0], didYouMean(args[0], commands()))
	}
	return cmd.run(ctx, append(args[1:], "--help"), stdout, stderr)
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}
