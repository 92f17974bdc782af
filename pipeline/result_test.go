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
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

func TestFreezeResult(t *testing.T) {
	r := Result{OK: true, Content: map[string]any{"z": json.Number("1E+2"), "a": []any{"x", true, nil, 2, 0.5}},
		Reason: ReasonSucceeded, Meta: map[string]string{MetaAttempt: "1", MetaOutputBytes: "42"}}
	f, err := FreezeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":{"a":["x",true,null,2,0.5],"z":1e2},"error":"","isError":false,"meta":{"attempt":"1","outputBytes":"42"},"ok":true,"reason":"Succeeded"}`
	if diff := cmp.Diff(want, f.String()); diff != "" {
		t.Errorf("canonical (-want +got):\n%s", diff)
	}
	if f.Digest() != canonjson.Digest([]byte(want)) {
		t.Errorf("digest mismatch")
	}
	// Stable: the same result freezes to the same digest; Value decodes the bytes.
	g, _ := FreezeResult(r)
	if g.Digest() != f.Digest() {
		t.Errorf("digest not stable")
	}
	v := f.Value().(map[string]any)
	if v["reason"] != "Succeeded" || v["content"].(map[string]any)["z"] != json.Number("1e2") {
		t.Errorf("value = %v", v)
	}
	// Changing the input afterwards does not change the frozen result.
	r.Content.(map[string]any)["z"] = "changed"
	if f.String() != want {
		t.Errorf("frozen result aliases its input")
	}
}

func TestFreezeResultErrors(t *testing.T) {
	for name, content := range map[string]any{
		"NaN":            math.NaN(),
		"bad number":     json.Number("0x10"),
		"bad UTF-8":      "\xff",
		"unsupported":    struct{}{},
		"bad nested key": map[string]any{"\xff": 1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := FreezeResult(Result{Content: content}); err == nil || !strings.Contains(err.Error(), "freezing result") {
				t.Errorf("err = %v", err)
			}
		})
	}
}
