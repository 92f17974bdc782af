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

package canonjson

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompareKeys(t *testing.T) {
	keys := []string{"\uffff", "\U00010000", "b", "a", "ab", "", "é", "\ue000", "\U0010ffff"}
	want := []string{"", "a", "ab", "b", "é", "\U00010000", "\U0010ffff", "\ue000", "\uffff"}
	got := append([]string(nil), keys...)
	sortKeys(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestSkipPlain compares the word-at-a-time scan with the table, byte by byte.
func TestSkipPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			if r.IntN(8) == 0 {
				b[i] = byte(r.IntN(256))
			} else {
				b[i] = "abc é\x7f\x80\xff"[r.IntN(9)]
			}
		}
		s := string(b)
		start := r.IntN(len(s) + 1)
		want := start
		for want < len(s) && plainByte[s[want]] {
			want++
		}
		if got := skipPlain(s, start); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", s, start, got, want)
		}
	}
}

// FuzzStoredNumber: the stored form is a fixed point. A number written by AppendStoredValue
// and read back (as the API server returns it, a plain literal) is written alike by
// AppendValue and by AppendStoredValue again, so a stored result read back keeps its digest.
func FuzzStoredNumber(f *testing.F) {
	for _, s := range []string{"1", "-0", "-0.0", "1.0", "1E+2", "2.50", "9223372036854775808", "123456789012345678901234567890",
		"1e20", "1e21", "0.000001", "1e-7", "1e-400", "5e-324", "1.7976931348623157e308", "1e400", "-9223372036854775809"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !isJSONNumber(s) {
			return
		}
		stored, err := AppendStoredValue(nil, json.Number(s), 0)
		if err != nil {
			return // no float64 holds it: the API server refuses it too
		}
		literal, err := AppendValue(nil, json.Number(string(stored)), 0)
		if err != nil || string(literal) != string(stored) {
			t.Fatalf("%s is stored as %s, which reads back as %s (%v)", s, stored, literal, err)
		}
		again, err := AppendStoredValue(nil, json.Number(string(stored)), 0)
		if err != nil || string(again) != string(stored) {
			t.Fatalf("%s is stored as %s, then as %s (%v)", s, stored, again, err)
		}
	})
}
