// Command mcpsession measures a 20-step coding session through `toolgate mcp` (stdio), the
// way a coding agent on an MCP SDK drives it (issue 32): write, read, edit, sh, list, grep
// over one session's workspace. It registers a scope with a workspace (and, with
// -sandbox, session sandboxes) and copies of the example workspace tools (with -runtime,
// under that RuntimeClass), starts bin/toolgate as the agent, and times every tools/call
// with the Go MCP SDK's client. It prints the first call and the calls after it.
//
//	go run ./test/bench/mcpsession -runtime gvisor -sandbox=true
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

const ns = "toolgate-demo"

var examples = []string{"ws-read-file", "ws-write-file", "ws-edit-file", "ws-list", "ws-grep", "ws-sh"}

// steps are the session's 20 calls: a small program written, run, edited and inspected.
func steps() []struct {
	tool string
	args map[string]any
} {
	type s = struct {
		tool string
		args map[string]any
	}
	out := []s{
		{"write_file", map[string]any{"path": "app/greet.sh", "content": "echo hello\n"}},
		{"read_file", map[string]any{"path": "app/greet.sh"}},
		{"sh", map[string]any{"command": "sh app/greet.sh"}},
		{"edit_file", map[string]any{"path": "app/greet.sh", "old_string": "hello", "new_string": "world"}},
		{"sh", map[string]any{"command": "sh app/greet.sh > app/out.txt"}},
		{"read_file", map[string]any{"path": "app/out.txt"}},
		{"list", map[string]any{"path": "app"}},
		{"grep", map[string]any{"pattern": "world"}},
	}
	for i := 0; len(out) < 20; i++ {
		name := fmt.Sprintf("notes/%d.txt", i)
		out = append(out, s{"write_file", map[string]any{"path": name, "content": fmt.Sprintf("note %d\n", i)}})
		if len(out) < 20 {
			out = append(out, s{"grep", map[string]any{"pattern": fmt.Sprintf("note %d", i)}})
		}
	}
	return out
}

func main() {
	runtime := flag.String("runtime", "gvisor", "RuntimeClass of the tools (empty: the node's default)")
	sandbox := flag.Bool("sandbox", true, "declare session sandboxes on the scope (false: a Pod per call)")
	rounds := flag.Int("rounds", 2, "sessions to run (each a new session: its first call starts its Pods)")
	flag.Parse()
	if err := run(*runtime, *sandbox, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "mcpsession:", err)
		os.Exit(1)
	}
}

func run(runtime string, sandbox bool, rounds int) error {
	root, err := toolgatetest.ModuleRoot()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(root, ".cluster", "kubeconfig"))
	if err != nil {
		return fmt.Errorf("admin kubeconfig (make up first): %w", err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: toolgatetest.NewScheme()})
	if err != nil {
		return err
	}
	ctx := context.Background()
	scope := fmt.Sprintf("bench-mcp-%d", time.Now().Unix())
	undo, err := register(ctx, admin, scope, runtime, sandbox)
	defer undo()
	if err != nil {
		return err
	}
	fmt.Printf("mcpsession: scope %s, runtime %q, session sandboxes %v, load %s\n", scope, runtime, sandbox, loadavg())
	for r := range rounds {
		if err := session(ctx, root, scope, fmt.Sprintf("%s-%d", scope, r)); err != nil {
			return err
		}
	}
	return nil
}

// register makes the scope and the tool copies, and returns their removal.
func register(ctx context.Context, admin client.Client, scope, runtime string, sandbox bool) (func(), error) {
	var objs []client.Object
	undo := func() {
		for _, o := range objs {
			_ = admin.Delete(context.Background(), o)
		}
	}
	w := toolgatetest.MakeToolScope(scope, ns).Subjects("agent").Workspace("64Mi", 10*time.Minute)
	if sandbox {
		w = w.SessionSandbox(10 * time.Minute)
	}
	s := w.Obj()
	if err := admin.Create(ctx, s); err != nil {
		return undo, err
	}
	objs = append(objs, s)
	for _, ex := range examples {
		var src toolgatev1alpha1.Tool
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: ex}, &src); err != nil {
			return undo, fmt.Errorf("example tool %s (make up applies config/examples/workspace.yaml): %w", ex, err)
		}
		t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: scope + "-" + ex, Namespace: ns}}
		t.Spec = *src.Spec.DeepCopy()
		t.Spec.Scope = scope
		if runtime != "" {
			t.Spec.Sandbox.RuntimeClassName = ptr.To(runtime)
		}
		if err := admin.Create(ctx, t); err != nil {
			return undo, err
		}
		objs = append(objs, t)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, o := range objs[1:] {
		for {
			var t toolgatev1alpha1.Tool
			if err := admin.Get(ctx, client.ObjectKeyFromObject(o), &t); err == nil && metaTrue(t.Status.Conditions, toolgatev1alpha1.ConditionRegistered) {
				break
			}
			if time.Now().After(deadline) {
				return undo, fmt.Errorf("tool %s not registered", o.GetName())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return undo, nil
}

func metaTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// session runs the 20 steps through one `toolgate mcp` process and prints their times.
func session(ctx context.Context, root, scope, name string) error {
	bin := filepath.Join(root, "bin", "toolgate")
	server := exec.Command(bin, "--kubeconfig", filepath.Join(root, ".cluster", "kubeconfigs", "agent.kubeconfig"),
		"-n", ns, "mcp", "--scope", scope, "--session", name)
	server.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-mcpsession", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		return fmt.Errorf("start %s mcp (make cli builds it): %w", bin, err)
	}
	defer func() { _ = cs.Close() }()
	var times []time.Duration
	begun := time.Now()
	for i, st := range steps() {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: st.tool, Arguments: st.args})
		d := time.Since(t0)
		if err != nil {
			return fmt.Errorf("step %d %s: %w", i+1, st.tool, err)
		}
		if res.IsError {
			return fmt.Errorf("step %d %s: isError: %v", i+1, st.tool, text(res))
		}
		times = append(times, d)
	}
	total := time.Since(begun)
	rest := times[1:]
	var sum time.Duration
	for _, d := range rest {
		sum += d
	}
	sorted := append([]time.Duration(nil), rest...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	fmt.Printf("session %s: 20 calls in %s; first %s; the 19 after it %s (median %s, max %s)\n", name,
		total.Round(time.Millisecond), times[0].Round(time.Millisecond), sum.Round(time.Millisecond),
		sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
	return nil
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
