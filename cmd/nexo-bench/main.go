// Command nexo-bench is Nexo's load-test harness. It is a client of the
// public protocol only (HTTP + WebSocket, docs/protocol.md): it registers
// its own users, creates its groups, opens sessions, sends at a scheduled
// rate or with a fixed number in flight, and measures every message's
// ACK(accepted), ACK(saved) and push at each recipient. inprocess.go is
// the one file that imports the server, to start it in this process for
// `make bench` and --inprocess.
//
//	nexo-bench [run] [flags]           one scenario (or a --compare of two configurations)
//	nexo-bench suite [flags]           the standard suite behind `make bench`
//	nexo-bench summarize [flags]       regenerate docs/bench/results.md and README's performance section
//
// docs/bench/README.md explains every figure. Exit status: 0 when every
// correctness counter is zero, 1 when a run failed or found a correctness
// failure, 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli runs nexo-bench with args (without the program name) and returns the
// exit status. Tables go to stdout; progress and logs to stderr.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "run"
	if len(args) > 0 && (args[0] == "run" || args[0] == "suite" || args[0] == "summarize" || args[0] == "upload" || args[0] == "help") {
		name, args = args[0], args[1:]
	}
	if rest, ok := uploadScenario(args); name == "run" && ok {
		name, args = "upload", rest
	}
	var err error
	switch name {
	case "help":
		fmt.Fprint(stdout, commandsUsage)
		return exitOK
	case "run":
		err = runCmd(ctx, args, stdout, stderr)
	case "suite":
		err = suiteCmd(ctx, args, stdout, stderr)
	case "summarize":
		err = summarizeCmd(args, stdout, stderr)
	case "upload":
		err = uploadCmd(ctx, args, stdout, stderr)
	}
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "nexo-bench %s: %v\n", name, err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "nexo-bench %s: %v\n", name, err)
		return exitFailure
	}
}

// commandsUsage lists the commands (nexo-bench help, nexo-bench --help).
const commandsUsage = `usage: nexo-bench [command] [flags]

Commands:
  run        one scenario against a server (the default command)
  suite      the standard suite behind ` + "`make bench`" + ` (JSON, HTML and results.md in --out-dir)
  summarize  regenerate docs/bench/results.md and README's performance section from saved results
  upload     direct uploads per size class (MB/s, latency percentiles; docs/bench/media.md)
  help       this list

nexo-bench COMMAND --help lists a command's flags.
`

// usageError is a bad flag combination (exit status 2).
type usageError struct{ error }

// errFailedRun is returned when a run completed but a correctness counter
// is not zero.
var errFailedRun = errors.New("a correctness counter is not zero (see the verdict above)")

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nexo-bench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// `nexo-bench --help` lands here (run is the default command): list
	// every command before run's flags.
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), commandsUsage+"\nFlags of run:\n")
		fs.PrintDefaults()
	}
	var o options
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := o.check(); err != nil {
		return usageError{err}
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var sw modeSwitch
	if o.InProcess {
		srv, err := startInProcess(ctx, o.Server, stderr)
		if err != nil {
			return err
		}
		defer srv.Close()
		o.URL, sw = srv.URL(), srv
		env, err := compareSettings(o.Compare)
		if err != nil {
			return usageError{err}
		}
		if env != nil {
			b, err := startSettingsServer(ctx, o.Server, env, stderr)
			if err != nil {
				return err
			}
			defer b.Close()
			o.CompareURL, o.compareSettings, o.Compare = b.URL(), o.Compare, ""
		}
	}
	return execute(ctx, &o, sw, stdout, stderr)
}

// execute runs what o asks for against o.URL (and o.CompareURL), prints
// the tables and writes --out and --html.
func execute(ctx context.Context, o *options, sw modeSwitch, stdout, stderr io.Writer) error {
	a, err := newSession(ctx, o, o.URL, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	if sw != nil {
		if a.mode, err = sw.SetMode(""); err != nil {
			return err
		}
	}
	if o.Compare != "" || o.CompareURL != "" {
		if o.Scenario == "connect" {
			return usageError{errors.New("--compare runs message scenarios, not connect")}
		}
		b, bsw := a, sw
		if o.CompareURL != "" {
			if b, err = newSession(ctx, o, o.CompareURL, stderr); err != nil {
				return err
			}
			defer b.close()
			bsw = nil
		}
		c, err := runCompare(ctx, stderr, o, a, b, "", o.Compare, bsw)
		if err != nil {
			return err
		}
		if o.compareSettings != "" {
			c.A.Mode, c.B.Mode = a.mode, a.mode+" "+o.compareSettings
		}
		writeCompare(stdout, c)
		if err := writeOutputs(o.Out, o.HTML, c, c.Name, compareText(c), compareChart(c)); err != nil {
			return err
		}
		if c.A.Median["failures"]+c.B.Median["failures"] > 0 {
			return errFailedRun
		}
		return nil
	}
	var res Result
	if o.Scenario == "connect" {
		res, err = a.runConnect(ctx, o.label())
	} else {
		res, err = a.runMessages(ctx, o.label())
	}
	if err != nil {
		return err
	}
	writeTable(stdout, &res)
	if err := writeOutputs(o.Out, o.HTML, &res, res.Name, tableText(&res), resultCharts(&res)); err != nil {
		return err
	}
	if !res.OK {
		return errFailedRun
	}
	return nil
}

// uploadScenario reports whether run's args select the upload scenario
// (--scenario upload, or =upload), and returns them without it: `run
// --scenario upload` is `upload`, whose flags the rest must be.
func uploadScenario(args []string) ([]string, bool) {
	for i, a := range args {
		switch a {
		case "--scenario=upload", "-scenario=upload":
			return append(append([]string{}, args[:i]...), args[i+1:]...), true
		case "--scenario", "-scenario":
			if i+1 < len(args) && args[i+1] == "upload" {
				return append(append([]string{}, args[:i]...), args[i+2:]...), true
			}
		}
	}
	return nil, false
}
