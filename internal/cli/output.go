package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/display"
)

// Output formats of -o.
const (
	outputText = "text"
	outputWide = "wide"
	outputJSON = "json"
	outputYAML = "yaml"
)

// addOutputFlag binds -o/--output to p, defaulting to the first allowed format.
func addOutputFlag(cmd *cobra.Command, p *string, allowed ...string) {
	cmd.Flags().StringVarP(p, "output", "o", allowed[0], "output format: "+strings.Join(allowed, "|"))
}

// checkOutput refuses a format the command does not print.
func checkOutput(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return Usagef("unknown output format %q (use %s)", format, strings.Join(allowed, ", "))
}

// printValue writes v as indented JSON or as YAML.
func printValue(w io.Writer, format string, v any) error {
	var data []byte
	var err error
	if format == outputYAML {
		data, err = yaml.Marshal(v)
	} else {
		data, err = json.MarshalIndent(v, "", "    ")
		data = append(data, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// withTypeMeta returns a copy of call with apiVersion and kind set, as kubectl prints objects.
func withTypeMeta(call *v1alpha1.ToolCall) *v1alpha1.ToolCall {
	out := call.DeepCopy()
	out.APIVersion = v1alpha1.GroupVersion.String()
	out.Kind = "ToolCall"
	return out
}

// callList wraps calls in a ToolCallList for -o json|yaml.
func callList(calls []v1alpha1.ToolCall) *v1alpha1.ToolCallList {
	list := &v1alpha1.ToolCallList{Items: make([]v1alpha1.ToolCall, 0, len(calls))}
	list.APIVersion = v1alpha1.GroupVersion.String()
	list.Kind = "ToolCallList"
	for i := range calls {
		list.Items = append(list.Items, *withTypeMeta(&calls[i]))
	}
	return list
}

// prettyJSON indents raw JSON with two spaces, keeping key order and numbers as written,
// and shows <, > and & as themselves (the API server's JSON encoder escapes them);
// invalid JSON is returned as it is.
func prettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTML(buf.String())
}

// showJSON is raw as prettyJSON lays it out, shown as text (display.Text): a JSON string
// may hold U+202E, DEL or C1 characters as they are.
func showJSON(raw []byte) string {
	return display.Text(prettyJSON(raw))
}

// htmlEscapes are the escapes Go's JSON encoder writes for <, > and &.
var htmlEscapes = map[string]byte{`\u003c`: '<', `\u003e`: '>', `\u0026`: '&'}

// unescapeHTML replaces the escapes \u003c, \u003e and \u0026 in JSON text with the
// characters they stand for, walking escapes pairwise so that an escaped backslash
// followed by "u003c" is left alone. The result is the same JSON value.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if i+6 <= len(s) {
			if c, ok := htmlEscapes[strings.ToLower(s[i:i+6])]; ok {
				b.WriteByte(c)
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// orNone is s, or "<none>" when empty, as kubectl shows missing values.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func fprintf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
