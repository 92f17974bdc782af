package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// CreatedBy is the toolgate.dev/created-by label of the calls the CLI creates.
const CreatedBy = "toolgate-cli"

// liveInterval is how often the live progress line is rewritten.
const liveInterval = 100 * time.Millisecond

type callOptions struct {
	f        *Factory
	tool     string
	args     string
	argsFile string
	pairs    []string
	scope    string
	session  string
	wait     bool
	timeout  time.Duration
	output   string
	argsSet  bool
}

func newCallCommand(f *Factory) *cobra.Command {
	o := &callOptions{f: f}
	cmd := &cobra.Command{
		Use:   "call TOOL [key=value ...]",
		Short: "Call a tool: create a ToolCall, and with --wait follow it and print its result",
		Long: `Create a ToolCall of TOOL as yourself. Arguments come from --args (a JSON object),
--args-file (a file holding one, - for stdin) and key=value pairs, which set top-level keys
on top of it: a value that parses as JSON (42, true, {"a":1}, "quoted") is taken as JSON,
anything else as a string. Without --wait the call's name is printed; with --wait the
call's stages are shown on stderr and its result printed on stdout.

Exit codes: 0 ok, 1 isError result, 2 denied, 3 usage (bad flags, bad JSON, unknown tool),
4 forbidden, 5 --timeout passed, 6 other errors.`,
		Example: `  toolgate call echo text=hi --wait
  toolgate call grep --args '{"pattern": "TODO", "path": "src"}' --wait -o json
  kubectl toolgate call deploy --args-file deploy.json --scope prod --wait --timeout 20m`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.tool, o.pairs = args[0], args[1:]
			o.argsSet = cmd.Flags().Changed("args")
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.args, "args", "", "the arguments as a JSON object")
	fl.StringVar(&o.argsFile, "args-file", "", "read the arguments (a JSON object) from this file; - for stdin")
	fl.StringVar(&o.scope, "scope", "", "the ToolScope to call in (default: the namespace layer)")
	fl.StringVar(&o.session, "session", "", "the session the call belongs to (calls of a session are ordered)")
	fl.BoolVar(&o.wait, "wait", false, "wait for the result, showing the call's stages")
	fl.DurationVar(&o.timeout, "timeout", 0, "with --wait, give up waiting after this long (0: until the call ends)")
	addOutputFlag(cmd, &o.output, outputText, outputJSON, outputYAML)
	return cmd
}

func (o *callOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	if o.timeout < 0 {
		return Usagef("--timeout must not be negative")
	}
	if err := checkSession(o.session); err != nil {
		return err
	}
	args, err := o.arguments()
	if err != nil {
		return err
	}
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	if err := checkTool(ctx, c, o.tool, o.scope, o.f.IO.ErrOut); err != nil {
		return err
	}
	call, err := c.Create(ctx, agentclient.CallRequest{
		Tool: o.tool, Scope: o.scope, Session: o.session, Arguments: args, CreatedBy: CreatedBy,
		Traceparent: os.Getenv("TRACEPARENT"), // the caller's trace context (W3C, as OTel's env carrier)
	})
	if err != nil {
		return explain(err, apiOp{verb: "create", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
	}
	if !o.wait {
		return o.printCreated(call)
	}
	done, err := o.follow(ctx, c, call)
	if err != nil {
		return err
	}
	return o.printResult(done)
}

// sessionPattern is spec.session's pattern: the API server refuses anything else.
var sessionPattern = regexp.MustCompile(v1alpha1.SessionPattern)

// checkSession refuses, before anything is created, a session the API server would refuse.
func checkSession(session string) error {
	if session == "" || len(session) <= 253 && sessionPattern.MatchString(session) {
		return nil
	}
	return Usagef("--session %q: a session is 1 to 253 letters, digits and . _ : / @ + = - (spec.session must match %s)",
		session, v1alpha1.SessionPattern)
}

// arguments reads --args / --args-file and the key=value pairs into one JSON object.
func (o *callOptions) arguments() (json.RawMessage, error) {
	in := argumentInput{Pairs: o.pairs}
	switch {
	case o.argsSet && o.argsFile != "":
		return nil, Usagef("--args and --args-file are mutually exclusive")
	case o.argsSet:
		in.JSON, in.Source = []byte(o.args), "--args"
	case o.argsFile != "":
		data, err := o.readArgsFile()
		if err != nil {
			return nil, err
		}
		in.JSON, in.Source = data, "--args-file "+o.argsFile
	}
	return buildArguments(in)
}

func (o *callOptions) readArgsFile() ([]byte, error) {
	if o.argsFile == "-" {
		data, err := io.ReadAll(o.f.IO.In)
		if err != nil {
			return nil, Usagef("--args-file -: reading stdin: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(o.argsFile)
	if err != nil {
		return nil, Usagef("--args-file: %w", err)
	}
	return data, nil
}

// checkTool refuses a tool the scope does not see, before anything is created. When the
// caller may not list ClusterTools the catalog is partial and the operator decides.
func checkTool(ctx context.Context, c *agentclient.Client, tool, scope string, notes io.Writer) error {
	cat, err := c.Tools(ctx, scope)
	var resolve *pipeline.ResolveError
	switch {
	case errors.As(err, &resolve):
		return Usagef("scope %q in namespace %q: %s", scope, c.Namespace, resolve.Msg)
	case err != nil:
		return explain(err, apiOp{verb: "list", resource: "tools.toolgate.dev", namespace: c.Namespace})
	}
	for _, t := range cat.Tools {
		if t.Name == tool {
			return nil
		}
	}
	if cat.ClusterToolsHidden {
		fprintf(notes, "note: %q is not among the tools you can list; you may not list ClusterTools, so the operator decides\n", tool)
		return nil
	}
	return Usagef("%s", unknownToolMessage(tool, scope, c.Namespace, cat.Tools))
}

// unknownToolMessage names the tool, where it was looked for, and what is visible there.
func unknownToolMessage(tool, scope, namespace string, visible []catalog.VisibleTool) string {
	where := fmt.Sprintf("namespace %q", namespace)
	if scope != "" {
		where = fmt.Sprintf("scope %q of %s", scope, where)
	}
	if len(visible) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are visible in %s", tool, where)
	}
	names := make([]string, 0, len(visible))
	for _, t := range visible {
		names = append(names, t.Name)
	}
	return fmt.Sprintf("unknown tool %q in %s; visible tools: %s", tool, where, strings.Join(names, ", "))
}

func (o *callOptions) printCreated(call *v1alpha1.ToolCall) error {
	if o.output != outputText {
		return printValue(o.f.IO.Out, o.output, withTypeMeta(call))
	}
	fprintf(o.f.IO.Out, "%s\n", call.Name)
	return nil
}

// follow waits until the call is done (or --timeout passes), showing its stages.
func (o *callOptions) follow(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall) (*v1alpha1.ToolCall, error) {
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if o.timeout > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, o.timeout)
	}
	defer cancel()
	p := newProgress(o.f.IO.ErrOut, isTerminal(o.f.IO.ErrOut), approvalHint(call.Name, c.Namespace))
	liveCtx, stopLive := context.WithCancel(waitCtx)
	go p.run(liveCtx, liveInterval)
	last, err := c.Wait(waitCtx, call.Name, agentclient.Done, p.observe)
	stopLive()
	p.finish()
	if err == nil {
		return last, nil
	}
	if last == nil {
		last = call
	}
	switch {
	case ctx.Err() != nil:
		return nil, Exitf(ExitInterrupted, "interrupted: call %s is %s and goes on (toolgate get %s)", call.Name, phaseOf(last), call.Name)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, Exitf(ExitTimeout, "gave up after %s: call %s is still %s and goes on (toolgate get %s)", o.timeout, call.Name, phaseOf(last), call.Name)
	}
	return nil, explain(err, apiOp{verb: "watch", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
}

// approvalHint tells the caller how the parked call moves on.
func approvalHint(name, namespace string) string {
	return fmt.Sprintf("call %s awaits approval: an approver runs `toolgate approve %s -n %s` (or deny); still waiting", name, name, namespace)
}

func (o *callOptions) printResult(call *v1alpha1.ToolCall) error {
	if o.output != outputText {
		if err := printValue(o.f.IO.Out, o.output, withTypeMeta(call)); err != nil {
			return err
		}
		return exitSilently(exitCodeForCall(call))
	}
	fprintf(o.f.IO.Out, "%s", formatResult(call.Status.Result))
	if call.Status.Result != nil {
		fprintf(o.f.IO.ErrOut, "%s", formatMeta(call.Status.Result.Meta))
	}
	return exitSilently(exitCodeForCall(call))
}
