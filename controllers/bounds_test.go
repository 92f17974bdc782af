package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/pipeline"
)

func TestBoundedFitsAndSaysSo(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		limit int
		cut   bool
	}{
		{"short", "hello", 10, false},
		{"exactly the limit", strings.Repeat("a", 64), 64, false},
		{"one over", strings.Repeat("a", 65), 64, true},
		{"large", strings.Repeat("x", 100<<10), maxConditionMessage, true},
		{"multi-byte runes", strings.Repeat("é", 40<<10), maxResultError, true},
		{"invalid UTF-8", strings.Repeat("\xff", 2000), maxEventNote, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := bounded(tc.in, tc.limit)
			if cut != tc.cut || len(got) > tc.limit {
				t.Fatalf("cut %v, %d bytes; want cut %v, at most %d", cut, len(got), tc.cut, tc.limit)
			}
			if !cut {
				if got != tc.in {
					t.Errorf("changed a message that fits")
				}
				return
			}
			if !utf8.ValidString(got) || !strings.Contains(got, "truncated") || !strings.Contains(got, "bytes in full") {
				t.Errorf("a cut message must be valid UTF-8 and say it was cut: %q", got[max(0, len(got)-60):])
			}
		})
	}
}

func TestBoundResultCutsErrorAndContentTogether(t *testing.T) {
	msg := "arguments do not match: " + strings.Repeat("A", 100<<10)
	res := boundResult(pipeline.Result{IsError: true, Reason: pipeline.ReasonSchemaViolation, Error: msg, Content: msg,
		Meta: map[string]string{pipeline.MetaViolations: "1"}})
	if len(res.Error) > maxResultError || res.Content != res.Error {
		t.Fatalf("error %d bytes, content %v", len(res.Error), res.Content == res.Error)
	}
	if res.Meta[pipeline.MetaMessageBytes] != "102424" || res.Meta[pipeline.MetaViolations] != "1" {
		t.Errorf("meta %v", res.Meta)
	}
	output := map[string]any{"big": strings.Repeat("o", 1<<10)}
	kept := boundResult(pipeline.Result{OK: true, Content: output})
	if kept.Meta != nil {
		t.Errorf("a result with no long error is unchanged: %v", kept.Meta)
	}
}
