// Command nexo is Nexo's single binary: `nexo serve` (the default) runs the
// server, `nexo migrate` applies database migrations, `nexo config check`
// validates and prints the effective configuration (secrets masked), `nexo
// search reindex` fills the message search table from stored messages, `nexo
// chat` is a tiny WebSocket client, `nexo version` (or `nexo --version`)
// prints build information. Global flags come before the command:
//
//	nexo [--config PATH] [--version] [serve|migrate|config check|search reindex|chat|version] [flags]
//
// Exit status: 0 on success, 2 for a usage or configuration error (the
// message names the offending key), 1 when the server or a migration fails.
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
	"slices"
	"strings"
	"syscall"

	"github.com/cloudwego/hertz/pkg/common/hlog"

	"github.com/nexo-im/nexo/cmd/app"
	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway"
)

// defaultConfigPath is read when --config is not given and the file exists
// in the working directory; otherwise the built-in defaults apply.
const defaultConfigPath = "configs/nexo.yaml"

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// command is one subcommand.
type command struct {
	name, summary string
	// run gets the loaded configuration; the version command needs none.
	run       func(ctx context.Context, inv invocation) error
	needsConf bool
	// flags, when set, defines the command's own flags; run reads them
	// from inv.flags.
	flags func(fs *flag.FlagSet)
}

func commands() []command {
	return []command{
		{"serve", "run the server (the default command)", serveCmd, true, nil},
		{"migrate", "apply database migrations and print the versions applied", migrateCmd, true, nil},
		{"config check", "validate the configuration and print it as YAML, secrets masked", configCheckCmd, true, nil},
		{"search reindex", "fill the message search table from stored messages, resuming an interrupted run", reindexCmd, true, reindexFlags},
		{"probe", "exit 0 when a URL (default the local /readyz) answers 200: the container healthcheck", probeCmd, false, probeFlags},
		{"version", "print version, commit and Go version", func(_ context.Context, inv invocation) error {
			_, err := fmt.Fprintln(inv.stdout, versionString())
			return err
		}, false, nil},
	}
}

// cli runs nexo with args (without the program name) and returns the exit
// status. environ replaces os.Environ for configuration overrides.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	global := flag.NewFlagSet("nexo", flag.ContinueOnError)
	global.SetOutput(stderr)
	configPath := global.String("config", "", "configuration file (default: "+defaultConfigPath+" if it exists, else built-in defaults)")
	showVersion := global.Bool("version", false, "print version, commit and Go version, and exit")
	global.Usage = func() { usage(global) }
	if err := global.Parse(args); err != nil {
		return helpOrUsage(err)
	}
	if *showVersion {
		fmt.Fprintln(stdout, versionString())
		return exitOK
	}
	rest := global.Args()
	name := "serve"
	if len(rest) > 0 {
		name, rest = rest[0], rest[1:]
	}
	if subs := subcommands(name); len(subs) > 0 {
		// A command of two words ("config check"); the first alone is a
		// usage error.
		if len(rest) == 0 || !slices.Contains(subs, rest[0]) {
			fmt.Fprintf(stderr, "nexo %s: want `nexo %s %s [flags]`\n", name, name, strings.Join(subs, "|"))
			return exitUsage
		}
		name, rest = name+" "+rest[0], rest[1:]
	}
	if name == "help" {
		global.SetOutput(stdout)
		usage(global)
		return exitOK
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == name {
			cmd = &c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "nexo: unknown command %q\n\n", name)
		usage(global)
		return exitUsage
	}

	fs := flag.NewFlagSet("nexo "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if cmd.needsConf {
		fs.StringVar(configPath, "config", *configPath, "configuration file (same as the global flag)")
	}
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: nexo [--config PATH] %s [flags]\n\n%s.\n", cmd.name, cmd.summary)
		if cmd.needsConf {
			fmt.Fprintf(fs.Output(), "\nEnvironment overrides every key: %s (e.g. NEXO_HTTP_ADDR for http.addr); see %s.\n", configs.EnvName("section.key"), defaultConfigPath)
		}
		if cmd.needsConf || cmd.flags != nil {
			fmt.Fprintf(fs.Output(), "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	if err := fs.Parse(rest); err != nil {
		return helpOrUsage(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "nexo %s: unexpected arguments %q\n", cmd.name, fs.Args())
		return exitUsage
	}

	var cfg configs.Config
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if cmd.needsConf {
		var err error
		cfg, err = loadConfig(*configPath, environ)
		if err != nil {
			printConfigErrors(stderr, err)
			return exitUsage
		}
		logger = newLogger(cfg.Log, stderr)
	}
	reload := func() (configs.Config, error) { return loadConfig(*configPath, environ) }
	inv := invocation{cfg: cfg, logger: logger, stdout: stdout, stderr: stderr, reload: reload, environ: environ, flags: fs}
	if err := cmd.run(ctx, inv); err != nil {
		logger.Error("nexo "+cmd.name+" failed", "err", err)
		return exitFailure
	}
	return exitOK
}

// subcommands returns the second words of the two-word commands whose
// first word is name ("check" for "config"), none for other names.
func subcommands(name string) []string {
	var out []string
	for _, c := range commands() {
		if first, second, ok := strings.Cut(c.name, " "); ok && first == name {
			out = append(out, second)
		}
	}
	return out
}

func helpOrUsage(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func usage(global *flag.FlagSet) {
	w := global.Output()
	fmt.Fprintf(w, "Nexo, an MQ-first instant-messaging server.\n\nUsage: nexo [--config PATH] [command] [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nGlobal flags:\n")
	global.PrintDefaults()
	fmt.Fprintf(w, "\nRun `nexo COMMAND --help` for a command's flags.\n")
}

// printConfigErrors prints a configuration error, one problem per line
// (configs.Load reports all of them at once).
func printConfigErrors(w io.Writer, err error) {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) == 1 {
		fmt.Fprintf(w, "nexo: %s\n", lines[0])
		return
	}
	fmt.Fprintf(w, "nexo: %d configuration errors:\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// loadConfig resolves the configuration file and loads it (see
// configs.Load). An explicit path must exist; without one, configs/nexo.yaml
// is used when present.
func loadConfig(path string, environ []string) (configs.Config, error) {
	if path == "" {
		if _, err := os.Stat(defaultConfigPath); err == nil {
			path = defaultConfigPath
		}
	}
	return configs.Load(path, environ)
}

// invocation is what a command gets: the loaded configuration (zero for
// commands that need none), the logger, stdout and stderr, and a way to
// load the configuration again (SIGHUP).
type invocation struct {
	cfg     configs.Config
	logger  *slog.Logger
	stdout  io.Writer
	stderr  io.Writer // for what is not the command's output (progress)
	reload  func() (configs.Config, error)
	environ []string
	flags   *flag.FlagSet // the command's parsed flags
}

// serveCmd runs the server until ctx is cancelled (SIGINT, SIGTERM). SIGHUP
// reloads the configuration and applies the two-phase switches and the
// word filter (moderation.*, its file read again); a file that no longer
// validates is logged and ignored.
//
// Precedence of the two-phase switches (docs/pipeline.md "Switches"): the
// environment beats the file at start and at every SIGHUP, and a process's
// environment cannot change while it runs, so a switch set by a NEXO_
// variable is fixed until restart; serve warns about it at start and at each
// SIGHUP. GET /admin/mode shows the switches in force.
func serveCmd(ctx context.Context, inv invocation) error {
	// Hertz's and go-redis's loggers are process-wide (library constraints):
	// install them once, here, before any server or client exists.
	hlog.SetLogger(gateway.HertzLogger(inv.logger))
	installRedisLogger(inv.logger)
	warnPinnedSwitches(inv.logger, inv.environ)
	tuneMemoryLimit(inv.logger, inv.environ)
	a, err := app.New(ctx, inv.cfg, inv.logger)
	if err != nil {
		return err
	}
	a.RegisterBuildInfo(buildVersion())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				cfg, err := inv.reload()
				if err != nil {
					inv.logger.Error("SIGHUP: configuration not reloaded", "err", err)
					continue
				}
				a.SetMode(cfg.TwoPhase)
				if err := a.SetModeration(cfg.Moderation); err != nil {
					inv.logger.Error("SIGHUP: word filter not reloaded", "err", err)
				}
				warnPinnedSwitches(inv.logger, inv.environ)
			}
		}
	}()
	return a.Run(ctx)
}
