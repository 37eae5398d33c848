// Command agenthost is the speaker's plugin host: `agenthost run` is the
// daemon; the other subcommands check its configuration and talk to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/clip"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// exitError carries an exit status: 2 for usage errors, exitConfig for a
// configuration with problems.
//
// The unit's RestartPreventExitStatus names exitConfig: a daemon that cannot
// start from its file must not be restarted over and over. It is not 2,
// which the Go runtime also uses when it dies of a panic.
const exitConfig = 78 // EX_CONFIG of sysexits.h

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// errHelpShown ends a command after its -h output, with status 0.
var errHelpShown = errors.New("help shown")

func usageErr(format string, a ...any) error {
	return &exitError{2, fmt.Errorf(format, a...)}
}

type command struct {
	summary string
	run     func(env *env, args []string) error
}

var commands = map[string]command{}

// hiddenCommands run like commands but are not listed: tools of the build
// (agenthost man).
var hiddenCommands = map[string]command{}

// env is what every subcommand gets: its streams and the shared flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	configPath     string
	configFlags    *flag.FlagSet // where --config was parsed
	sets           stringList
	logLevel       string
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "agenthost:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(1)
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return nil
	}
	if args[0] == "help" {
		return cmdHelp(args[1:], stdout, stderr)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		cmd, ok = hiddenCommands[args[0]]
	}
	if !ok {
		printUsage(stderr)
		return usageErr("unknown command %q", args[0])
	}
	err := cmd.run(&env{stdin: stdin, stdout: stdout, stderr: stderr}, args[1:])
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: agenthost COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `agenthost help COMMAND` (or `agenthost COMMAND -h`) for a command's usage, flags and examples;\n`man agenthost` for all of them.")
}

// flags returns a flag set with the shared --config, --set and --log-level
// flags. The file is the installed one (config.DefaultPath), unless
// AGENTHOST_CONFIG names another, unless --config does.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("agenthost "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { writeHelp(e.stderr, strings.Fields(name)[0], fs) }
	def := os.Getenv(config.EnvConfigPath)
	if def == "" {
		def = config.DefaultPath
	}
	e.configFlags = fs
	fs.StringVar(&e.configPath, "config", def, "the YAML configuration file (default: env "+config.EnvConfigPath+", else "+config.DefaultPath+")")
	fs.Var(&e.sets, "set", "override one setting, KEY=VALUE (e.g. server.address=127.0.0.1:8009); repeatable")
	fs.StringVar(&e.logLevel, "log-level", "", "debug, info, warn or error (overrides log.level)")
	return fs
}

// parse accepts flags before, between and after the positional arguments
// (`agenthost talk start --config F`).
func (e *env) parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return errHelpShown
			}
			return &exitError{2, err}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional, args = append(positional, args[0]), args[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// loadConfig loads the file named by --config; a missing default file is fine.
func (e *env) loadConfig() (*config.Config, error) {
	overrides, err := config.ParseSets(e.sets)
	if err != nil {
		return nil, &exitError{2, err}
	}
	if e.logLevel != "" {
		overrides["log.level"] = e.logLevel
	}
	path := e.configPath
	if path == config.DefaultPath {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			path = ""
		}
	}
	cfg, err := config.Load(path, overrides)
	if err != nil {
		return nil, &exitError{exitConfig, fmt.Errorf("the configuration has problems:\n%w", err)}
	}
	return cfg, nil
}

// configSource says which file the command took and why: --config,
// AGENTHOST_CONFIG, the installed path, or the built-in defaults.
func (e *env) configSource(cfg *config.Config) string {
	switch {
	case e.configFlags != nil && flagSet(e.configFlags, "config"):
		return e.configPath + " (from --config)"
	case os.Getenv(config.EnvConfigPath) != "":
		return e.configPath + " (from " + config.EnvConfigPath + ")"
	case cfg.Path == "":
		return "the built-in defaults (" + config.DefaultPath + " does not exist)"
	}
	return e.configPath + " (the installed file)"
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// newLogger returns the logger the configuration asks for; level, when
// given, holds its level so that it can change while the daemon runs.
func newLogger(cfg *config.Config, w io.Writer, level ...*slog.LevelVar) *slog.Logger {
	lv := new(slog.LevelVar)
	if len(level) > 0 {
		lv = level[0]
	}
	lv.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	// Names, arguments and output from outside reach many lines: every
	// string of every line is clipped here, once.
	return slog.New(clip.Handler(h, clip.LogValue))
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func init() {
	commands["version"] = command{"print the version", func(e *env, args []string) error {
		if len(args) > 0 && strings.TrimLeft(args[0], "-") == "h" || len(args) > 0 && args[0] == "--help" {
			writeHelp(e.stderr, "version", nil)
			return errHelpShown
		}
		fmt.Fprintf(e.stdout, "agenthost %s (%s, %s/%s; voice protocol TCP v2.5 with MCP; plugin contract v1)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}}
}
