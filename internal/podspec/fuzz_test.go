package podspec

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// toolName is the pattern of a model-facing tool name (Tool and ToolCall spec.tool).
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// FuzzToolLabelValue: for every tool name, the label value is a valid label value, the
// name itself when that is one, and otherwise a hashed value that contains '.', so it
// never equals a tool name; two different names never share a value.
func FuzzToolLabelValue(f *testing.F) {
	for _, s := range []string{"echo", "_probe", "-x-", strings.Repeat("a", 64), strings.Repeat("_", 64), "a_b-c",
		"A" + strings.Repeat("-", 62) + "Z", strings.Repeat("9", 63) + "_"} {
		f.Add(s, "echo")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		la := ToolLabelValue(a) // never panics, whatever the string
		if !toolName.MatchString(a) {
			return
		}
		if errs := validation.IsValidLabelValue(la); len(errs) > 0 {
			t.Fatalf("ToolLabelValue(%q) = %q: %v", a, la, errs)
		}
		valid := len(validation.IsValidLabelValue(a)) == 0
		if valid != (la == a) || !valid && !strings.Contains(la, ".") {
			t.Fatalf("ToolLabelValue(%q) = %q (the name is a label value: %v)", a, la, valid)
		}
		if toolName.MatchString(b) && a != b && ToolLabelValue(b) == la {
			t.Fatalf("tools %q and %q share the label value %q", a, b, la)
		}
	})
}

// FuzzJobNames: for every call name (a DNS subdomain) and attempt, the Job name is a DNS
// subdomain of at most 63 characters, the call label a label value, both the names
// themselves when they fit, and another attempt of the call never gets the same Job.
func FuzzJobNames(f *testing.F) {
	for _, s := range []string{"hello", "a", strings.Repeat("a", 63), strings.Repeat("a", 61) + ".b", strings.Repeat("ab-", 84) + "c",
		strings.Repeat("x.", 30) + "yyyyy"} {
		f.Add(s, int32(1))
		f.Add(s, int32(2147483647))
	}
	f.Fuzz(func(t *testing.T, call string, attempt int32) {
		if attempt < 1 || len(validation.IsDNS1123Subdomain(call)) > 0 {
			return
		}
		job := JobName(call, attempt)
		if errs := validation.IsDNS1123Subdomain(job); len(errs) > 0 || len(job) > maxJobName {
			t.Fatalf("JobName(%q, %d) = %q: %v", call, attempt, job, errs)
		}
		if fits := len(call)+1+len(strconv.Itoa(int(attempt))) <= maxJobName; fits != (job == call+"-"+strconv.Itoa(int(attempt))) {
			t.Fatalf("JobName(%q, %d) = %q", call, attempt, job)
		}
		if other := attempt%1000 + 1; other != attempt && JobName(call, other) == job {
			t.Fatalf("attempts %d and %d of %q share the Job %q", attempt, other, call, job)
		}
		label := CallLabelValue(call)
		if errs := validation.IsValidLabelValue(label); len(errs) > 0 || (len(call) <= 63) != (label == call) {
			t.Fatalf("CallLabelValue(%q) = %q: %v", call, label, errs)
		}
	})
}

// FuzzLiteralEnv: whatever the value, the kubelet's expansion of $(VAR) references (a
// copy of its code, expandEnv) gives the container exactly the value toolgate set,
// whatever variables are defined.
func FuzzLiteralEnv(f *testing.F) {
	for _, s := range []string{"", "$", "$$", "$(HOME)", "$$(HOME)", "a$(b", "$(", "x$", "\xff$\xfe", "$(" + podcontract.EnvArgs + ")$(", `{"cmd":"echo $(id)"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		env := literalEnv("X", value)
		defined := func(name string) string { return "<" + name + ">" }
		if got := expandEnv(env.Value, defined); got != value {
			t.Fatalf("literalEnv(%q) reaches the container as %q", value, got)
		}
		undefined := func(name string) string { return "$(" + name + ")" }
		if got := expandEnv(env.Value, undefined); got != value {
			t.Fatalf("literalEnv(%q) reaches the container as %q", value, got)
		}
	})
}

// expandEnv is the kubelet's expansion of $(VAR) in env values: a copy of Expand from
// k8s.io/kubernetes/third_party/forked/golang/expansion (v1.37.2; BSD-style licence,
// Copyright 2009 The Go Authors), which toolgate does not depend on.
func expandEnv(input string, mapping func(string) string) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] == '$' && cursor+1 < len(input) {
			buf.WriteString(input[checkpoint:cursor])
			read, isVar, advance := tryReadVariableName(input[cursor+1:])
			if isVar {
				buf.WriteString(mapping(read))
			} else {
				buf.WriteString(read)
			}
			cursor += advance
			checkpoint = cursor + 1
		}
	}
	return buf.String() + input[checkpoint:]
}

func tryReadVariableName(input string) (string, bool, int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$':
		return input[0:size], false, size
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	default:
		return "$" + string(r), false, size
	}
}
