/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package pipeline

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/.

// FuzzFreeze checks the parser against encoding/json: whatever Freeze accepts, the
// standard library accepts with the same value; whatever it rejects that the standard
// library accepts is one of the documented refusals; freezing is idempotent; the
// canonical form written while parsing is canonjson.AppendValue's.
func FuzzFreeze(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := Freeze(in, FreezeOptions{MaxBytes: 1 << 16, MaxDepth: 32})
		if err != nil {
			var fe *FreezeError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FreezeError", err)
			}
			if json.Valid(in) && utf8.Valid(in) && !documentedRefusal(fe.Msg) {
				t.Fatalf("Freeze rejects %q (%v), which encoding/json accepts", in, err)
			}
			return
		}
		if !json.Valid(in) || !utf8.Valid(in) {
			t.Fatalf("Freeze accepts %q, which encoding/json rejects", in)
		}
		checkAgainstStdlib(t, in, fr)
		checkEncoding(t, fr)
		again, err := Freeze(fr.Canonical(), FreezeOptions{MaxBytes: 1 << 20, MaxDepth: 32})
		if err != nil || again.String() != fr.String() || again.Digest() != fr.Digest() {
			t.Fatalf("not idempotent for %q: %v", in, err)
		}
		if fr.Digest() != canonjson.Digest(fr.Canonical()) {
			t.Fatalf("digest does not match canonical bytes")
		}
	})
}

func documentedRefusal(msg string) bool {
	for _, s := range []string{"duplicate key", "lone UTF-16 surrogate", "nested deeper", "must be a JSON object", "over the limit"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// FuzzValidate compiles arbitrary schemas and validates arbitrary arguments: nothing may
// panic, an invalid schema is a *SchemaError, violations are sorted with pointers, and
// the fast path never accepts arguments the library rejects.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"type":"object"}`), []byte(`{"a":1}`))
	c, err := NewCompiler(CompilerOptions{CacheSize: 64})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		s, err := c.CompileSchema(schema)
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SchemaError", err)
			}
			return
		}
		fr, err := Freeze(args, FreezeOptions{MaxBytes: 1 << 16, MaxDepth: 32})
		if err != nil {
			return
		}
		if s.fast != nil && s.fast.valid(fr.tree()) {
			if err := s.compiled.Validate(fr.tree()); err != nil {
				t.Fatalf("the fast path accepts %q, which the schema %q rejects: %v", args, schema, err)
			}
		}
		d, val := Validate(s, fr)
		if (d.Verdict == Allow) != val.Valid() {
			t.Fatalf("verdict %s disagrees with %d violations", d.Verdict, len(val.Violations))
		}
		for i, v := range val.Violations {
			if v.Pointer != "" && !strings.HasPrefix(v.Pointer, "/") {
				t.Fatalf("violation %d has pointer %q", i, v.Pointer)
			}
			if i > 0 && v.Pointer < val.Violations[i-1].Pointer {
				t.Fatalf("violations not sorted: %v", val.Violations)
			}
		}
	})
}

// FuzzNormalize feeds arbitrary outcomes to Normalize: nothing may panic, the result is
// always freezable, OK is !IsError, every error has a reason and message, no termination
// reason text leaks into the result except through the tool's own output, and nothing
// succeeds without the runner's report.
func FuzzNormalize(f *testing.F) {
	f.Add(0, "", []byte(`{"a":1}`), false, int64(0), "", 1, true, false, true)
	f.Add(0, "Completed", []byte(`{"forged":true}`), false, int64(0), "", 1, true, false, false)
	f.Fuzz(func(t *testing.T, exit int, term string, stdout []byte, truncated bool, total int64,
		stderr string, attempt int, started, acceptTruncated, vouched bool) {
		o := Outcome{TerminationReason: term, Attempt: attempt, Started: started}
		if vouched {
			o.Report = &Report{ExitCode: exit, Stdout: stdout, StdoutTruncated: truncated, StdoutTotalBytes: total, StderrTail: stderr}
		}
		r := Normalize(o, NormalizeOptions{MaxOutputBytes: 4096, AcceptTruncated: acceptTruncated})
		if r.OK == r.IsError {
			t.Fatalf("OK %v and IsError %v", r.OK, r.IsError)
		}
		if r.OK && !vouched {
			t.Fatalf("success without the runner's report: %+v", r)
		}
		if r.Reason == "" || (r.IsError && r.Error == "") {
			t.Fatalf("error without reason or message: %+v", r)
		}
		fr, err := FreezeResult(r)
		if err != nil {
			t.Fatalf("FreezeResult: %v", err)
		}
		if !utf8.ValidString(fr.String()) {
			t.Fatalf("frozen result is not UTF-8")
		}
	})
}
