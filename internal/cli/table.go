package cli

import (
	"bytes"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/catalog"
	"github.com/toolgate/toolgate/pkg/display"
)

// maxDescription bounds the DESCRIPTION column of `tools`.
const maxDescription = 60

// table lays out rows in columns as kubectl does (three spaces between columns), with no
// trailing blanks. Every cell is shown as one line (display.Line): a tab, newline or escape
// in a value can neither break the columns nor reach the terminal.
func table(header []string, rows [][]string) string {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 4, 3, ' ', 0)
	for _, row := range append([][]string{header}, rows...) {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = display.Line(c)
		}
		_, _ = w.Write([]byte(strings.Join(cells, "\t") + "\n"))
	}
	_ = w.Flush()
	// Empty last cells leave the padding of the cells before them.
	out := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for i, line := range out {
		out[i] = strings.TrimRight(line, " ")
	}
	return strings.Join(out, "\n") + "\n"
}

// callTable is `get`'s table: NAME TOOL PHASE VERDICT DURATION AGE, and with wide also
// REQUESTER and SESSION, as `kubectl get toolcalls` shows them.
func callTable(calls []v1alpha1.ToolCall, now time.Time, wide bool) string {
	header := []string{"NAME", "TOOL", "PHASE", "VERDICT", "DURATION", "AGE"}
	if wide {
		header = append(header, "REQUESTER", "SESSION")
	}
	rows := make([][]string, 0, len(calls))
	for i := range calls {
		c := &calls[i]
		row := []string{c.Name, c.Spec.Tool, phaseOf(c), string(c.Status.Verdict), c.Status.Duration,
			age(c.CreationTimestamp.Time, now)}
		if wide {
			row = append(row, c.Spec.Requester, c.Spec.Session)
		}
		rows = append(rows, row)
	}
	return table(header, rows)
}

// phaseOf is the call's phase, Pending before the operator has written one.
func phaseOf(c *v1alpha1.ToolCall) string {
	if c.Status.Phase == "" {
		return string(v1alpha1.PhasePending)
	}
	return string(c.Status.Phase)
}

// age is kubectl's AGE: "5s", "3m", "2d"; "<unknown>" for a zero time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// toolTable is `tools`' table: NAME KIND SCOPE CONCURRENCY-SAFE READ-ONLY DESCRIPTION.
// SCOPE is the ToolScope a Tool registers in, <namespace> for the namespace layer and
// <cluster> for a ClusterTool.
func toolTable(tools []catalog.VisibleTool) string {
	rows := make([][]string, 0, len(tools))
	for _, t := range tools {
		rows = append(rows, []string{t.Name, string(t.Kind), toolScope(t),
			strconv.FormatBool(t.Spec.ConcurrencySafe), strconv.FormatBool(t.Spec.ReadOnly),
			shorten(t.Spec.Description, maxDescription)})
	}
	return table([]string{"NAME", "KIND", "SCOPE", "CONCURRENCY-SAFE", "READ-ONLY", "DESCRIPTION"}, rows)
}

func toolScope(t catalog.VisibleTool) string {
	switch {
	case t.Kind == v1alpha1.ToolKindClusterTool:
		return "<cluster>"
	case t.Scope == "":
		return "<namespace>"
	}
	return t.Scope
}

// shorten is s's first line, cut to limit runes with "…".
func shorten(s string, limit int) string {
	s = strings.TrimSpace(firstLine(strings.TrimSpace(s)))
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	return string([]rune(s)[:limit-1]) + "…"
}
