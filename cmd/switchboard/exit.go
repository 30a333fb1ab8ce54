package main

// Exit codes and the one plain sentence a person sees for a usage mistake.
//
//	0  success
//	1  a runtime failure (the daemon is down, the disk is full, the model failed,
//	   the data file is damaged), and a panic in a command (crash.go)
//	2  a usage or configuration mistake: an unknown command or flag, a missing
//	   or extra argument, a config file that does not exist or does not load
//
// cobra's own texts ("accepts 1 arg(s), received 0", "unknown flag: --x") are
// replaced here by sentences that name the command and its usage line.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
)

const (
	exitFailure = 1
	exitUsage   = 2
)

// exitError carries a process exit code with a message for stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks an error as the operator's mistake (exit code 2).
func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// usagef is usageErr(fmt.Errorf(...)).
func usagef(format string, args ...any) error { return usageErr(fmt.Errorf(format, args...)) }

// exitCode maps the error Execute returned (and the command it ran) to the
// process's exit code and the sentence printed after "switchboard: ".
func exitCode(cmd *cobra.Command, err error) (int, string) {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, err.Error()
	}
	var ce *config.Error
	if errors.As(err, &ce) { // a config or persona file mistake found at start
		return exitUsage, err.Error()
	}
	msg := err.Error()
	// cobra checks required flags after parsing, outside FlagErrorFunc.
	if rest, ok := strings.CutPrefix(msg, "required flag(s) "); ok {
		return exitUsage, fmt.Sprintf("`%s` needs %s; usage: %s", path(cmd), requiredFlags(rest), cmd.UseLine())
	}
	return exitFailure, msg
}

// requiredFlags turns the rest of cobra's `required flag(s) "from", "to" not
// set` into "--from and --to".
func requiredFlags(rest string) string {
	var names []string
	for _, n := range strings.Split(strings.TrimSuffix(rest, " not set"), ",") {
		if n = strings.Trim(strings.TrimSpace(n), `"`); n != "" {
			names = append(names, "--"+n)
		}
	}
	switch len(names) {
	case 0:
		return "more flags"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func path(cmd *cobra.Command) string {
	if cmd == nil {
		return "switchboard"
	}
	return cmd.CommandPath()
}

// wireUsage makes every usage mistake under root exit 2 with a plain
// sentence: flag errors, argument counts, unknown (sub)commands.
func wireUsage(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErr(flagError(cmd, err))
	})
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknownCommand(cmd, args[0])
		}
		return nil
	}
	root.SuggestionsMinimumDistance = 2
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			sub.SuggestionsMinimumDistance = 2
			switch {
			case sub.HasSubCommands() && sub.RunE == nil && sub.Run == nil:
				sub.Args = cobra.ArbitraryArgs
				sub.RunE = groupRunE
			case sub.Args != nil:
				orig := sub.Args
				sub.Args = func(cmd *cobra.Command, args []string) error {
					if orig(cmd, args) != nil {
						return usageErr(argsError(cmd, args))
					}
					return nil
				}
			}
			walk(sub)
		}
	}
	walk(root)
}

// groupRunE answers a command group ("jobs", "config") called without a
// known subcommand.
func groupRunE(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(args) == 0 {
		return usagef("`%s` needs a subcommand: %s (see `%s --help`)", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
	}
	return unknownCommand(cmd, args[0])
}

func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for `%s`", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usagef("%s; see `%s --help`", msg, cmd.CommandPath())
}

// argsError explains a wrong number of positional arguments using the
// argument names of the command's Use line ("run NAME", "set KEY VALUE").
func argsError(cmd *cobra.Command, args []string) error {
	need, all := useArgs(cmd.Use)
	usage := cmd.UseLine()
	switch {
	case len(all) == 0:
		return fmt.Errorf("`%s` takes no arguments, but got %q; usage: %s", cmd.CommandPath(), args[0], usage)
	case len(args) < len(need):
		return fmt.Errorf("`%s` needs %s; usage: %s", cmd.CommandPath(), strings.Join(need[len(args):], " and "), usage)
	default:
		return fmt.Errorf("`%s` takes %s only, but got %d arguments (quote text with spaces); usage: %s",
			cmd.CommandPath(), strings.Join(all, " "), len(args), usage)
	}
}

// useArgs returns the required argument words of a Use line and all of
// them (optional ones keep their [brackets]), skipping flags and their values.
func useArgs(use string) (need, all []string) {
	words := strings.Fields(use)
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "-"):
			i++ // the flag's value
		case strings.HasPrefix(w, "["):
			all = append(all, w)
		default:
			need = append(need, w)
			all = append(all, w)
		}
	}
	return need, all
}

// flagError rewrites pflag's messages as one sentence naming the command.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	help := fmt.Sprintf("see `%s --help`", cmd.CommandPath())
	switch {
	case strings.HasPrefix(msg, "unknown flag: "):
		return fmt.Errorf("`%s` has no flag %s; %s", cmd.CommandPath(), strings.TrimPrefix(msg, "unknown flag: "), help)
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		f, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown shorthand flag: "), " in ")
		return fmt.Errorf("`%s` has no flag -%s; %s", cmd.CommandPath(), strings.Trim(f, "'"), help)
	case strings.HasPrefix(msg, "flag needs an argument: "):
		f := strings.TrimPrefix(msg, "flag needs an argument: ")
		if _, short, ok := strings.Cut(f, " in "); ok {
			f = short
		}
		return fmt.Errorf("%s needs a value; %s", f, help)
	case strings.HasPrefix(msg, "invalid argument "):
		// invalid argument "x" for "--limit" flag: strconv.ParseInt: …
		head, _, _ := strings.Cut(msg, " flag:")
		return fmt.Errorf("%s flag; %s", strings.Replace(head, "invalid argument", "invalid value", 1), help)
	}
	return fmt.Errorf("%s; %s", msg, help)
}
