package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildArguments(t *testing.T) {
	cases := []struct {
		name    string
		in      argumentInput
		want    string
		wantErr string
	}{
		{name: "nothing is an empty object", want: `{}`},
		{name: "JSON passes through as written", in: argumentInput{JSON: []byte(" {\"b\": 1, \"a\": [true]}\n"), Source: "--args"}, want: `{"b": 1, "a": [true]}`},
		{name: "pairs: JSON values and strings", in: argumentInput{Pairs: []string{"n=42", "ok=true", "o={\"a\":1}", "s=hello world", "q=\"7\"", "e="}},
			want: `{"e":"","n":42,"o":{"a":1},"ok":true,"q":"7","s":"hello world"}`},
		{name: "pairs set keys on top of --args", in: argumentInput{JSON: []byte(`{"a":1,"b":2}`), Source: "--args", Pairs: []string{"b=3", "c=x"}},
			want: `{"a":1,"b":3,"c":"x"}`},
		{name: "value with an equals sign", in: argumentInput{Pairs: []string{"expr=a=b"}}, want: `{"expr":"a=b"}`},
		{name: "not JSON-looking but almost", in: argumentInput{Pairs: []string{"v=tru", "w=1.2.3"}}, want: `{"v":"tru","w":"1.2.3"}`},
		{name: "pair without =", in: argumentInput{Pairs: []string{"flag"}}, wantErr: `argument "flag" is not key=value`},
		{name: "pair with empty key", in: argumentInput{Pairs: []string{"=1"}}, wantErr: `argument "=1" is not key=value`},
		{name: "syntax error with position", in: argumentInput{JSON: []byte(`{"text": hi}`), Source: "--args"},
			wantErr: `--args: invalid JSON at line 1, column 10 (offset 10): invalid character 'h' looking for beginning of value`},
		{name: "syntax error on a later line", in: argumentInput{JSON: []byte("{\n  \"a\": 1,\n  \"b\": ]\n}"), Source: "args.json"},
			wantErr: `args.json: invalid JSON at line 3, column 8 (offset 20): invalid character ']' looking for beginning of value`},
		{name: "truncated", in: argumentInput{JSON: []byte(`{"a": 1`), Source: "--args"},
			wantErr: `--args: invalid JSON at line 1, column 7 (offset 7): unexpected end of JSON input`},
		{name: "empty", in: argumentInput{JSON: []byte(``), Source: "--args"},
			wantErr: `--args: invalid JSON at line 1, column 1 (offset 0): unexpected end of JSON input`},
		{name: "trailing data", in: argumentInput{JSON: []byte(`{} x`), Source: "--args"},
			wantErr: `--args: invalid JSON at line 1, column 4 (offset 4): invalid character 'x' after top-level value`},
		{name: "array", in: argumentInput{JSON: []byte(`[1]`), Source: "--args"}, wantErr: `--args: the arguments must be a JSON object, not array`},
		{name: "string", in: argumentInput{JSON: []byte(`"x"`), Source: "--args"}, wantErr: `--args: the arguments must be a JSON object, not string`},
		{name: "null", in: argumentInput{JSON: []byte(`null`), Source: "--args"}, wantErr: `--args: the arguments must be a JSON object, not null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildArguments(tc.in)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got %s, want error %q", got, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if code := ExitCodeOf(err); code != ExitUsage {
					t.Errorf("exit code %d, want %d", code, ExitUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`{"c":"2\u003e\u00261 | a \u003c b"}`: `{"c":"2>&1 | a < b"}`,
		`{"c":"\\u003e"}`:                     `{"c":"\\u003e"}`,
		`{"c":"\\\u003e"}`:                    `{"c":"\\>"}`,
		`{"c":"\u00e9 \"q\""}`:                `{"c":"\u00e9 \"q\""}`,
		`"\`:                                  `"\`,
	} {
		if got := unescapeHTML(in); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}
