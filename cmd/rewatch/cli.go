package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes: scripts tell a mistake in the invocation (2) from a failure at run time (1).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a mistake the user can fix by changing the command line or its inputs.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// command is one subcommand. run gets the arguments after the command name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"watch", "LIST and WATCH a resource of a live cluster, printing its objects as kubectl get -w does", nil},
		{"demo", "run the reflector against an embedded simulated API server with injected faults", runDemo},
		{"replay", "replay a journal, printing its transitions; --check verifies the commands", runReplay},
		{"diagram", "draw the reflector's state machine (mermaid, dot, svg)", runDiagram},
	}
}

// run is main without the process: tests call it with their own writers and context.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		topUsage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		topUsage(stdout)
		return exitOK
	}
	if name == "watch" {
		// kubectl's flags, messages and exit status (docs/cli.md, "Exit status").
		return watchMain(ctx, args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "rewatch %s: %s\n", name, oneLine(err))
			return exitUsage
		default:
			fmt.Fprintf(stderr, "rewatch %s: %s\n", name, oneLine(err))
			return exitFailure
		}
	}
	fmt.Fprintf(stderr, "rewatch: unknown command %q (try rewatch --help)\n", name)
	return exitUsage
}

// oneLine keeps an error to the single line promised on stderr; wrapped errors from the
// Kubernetes libraries sometimes span several.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func topUsage(w io.Writer) {
	fmt.Fprintln(w, "rewatch: a Kubernetes reflector that re-watches instead of relisting after transient failures.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: rewatch <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run rewatch <command> --help for the flags of a command. Exit status: 0 ok, 1 failure, 2 usage error.")
}

// flagSet is a command's flags and its help text.
type flagSet struct {
	*flag.FlagSet
	help func()
}

// newFlagSet returns flags that report errors through parse instead of printing them, so a
// bad flag yields exactly one line on stderr. The flag package calls Usage on every parse
// error, so Usage stays silent and parse prints the help only for --help.
func newFlagSet(name, synopsis, description, example string, stdout io.Writer) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, help: func() {
		fmt.Fprintf(stdout, "Usage: rewatch %s %s\n\n%s\n\nFlags:\n", name, synopsis, description)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		fmt.Fprintf(stdout, "\nExample:\n%s\n", example)
	}}
}

// parse parses args; --help prints the help to stdout and returns flag.ErrHelp.
func parse(fs *flagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.help()
		return flag.ErrHelp
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// noArgs rejects stray positional arguments, which would otherwise silently stop flag parsing.
func noArgs(fs *flagSet) error {
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// choice validates an enumerated flag value.
func choice(flagName, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return usagef("invalid value %q for --%s: want one of %s", v, flagName, strings.Join(allowed, ", "))
}
