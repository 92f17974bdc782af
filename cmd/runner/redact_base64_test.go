package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/frame"
)

// stableRun is where value's bits alone decide enc(prefix ‖ value ‖ suffix): the characters
// that stay the same when every bit of prefix and suffix (not empty) is flipped. It is the
// specification of base64Cores, found without its arithmetic.
func stableRun(t testing.TB, enc *base64.Encoding, prefix, value, suffix []byte) (start, end int) {
	t.Helper()
	if len(suffix) == 0 {
		t.Fatal("stableRun needs a suffix")
	}
	flip := func(b []byte) []byte {
		out := make([]byte, len(b))
		for i := range b {
			out[i] = ^b[i]
		}
		return out
	}
	x := enc.EncodeToString(bytes.Join([][]byte{prefix, value, suffix}, nil))
	y := enc.EncodeToString(bytes.Join([][]byte{flip(prefix), value, flip(suffix)}, nil))
	start, end = -1, -1
	for i := range x {
		switch {
		case x[i] == y[i] && start < 0:
			start = i
		case x[i] == y[i] && end >= 0:
			t.Fatalf("%q and %q agree in more than one run", x, y)
		case x[i] != y[i] && start >= 0 && end < 0:
			end = i
		}
	}
	if start < 0 || end < 0 {
		t.Fatalf("%q and %q agree nowhere, or up to the suffix", x, y)
	}
	return start, end
}

// wantEverySplit fails unless text, written whole, split into two writes at every
// position, and one byte at a time, is redacted to want with n replacements.
func wantEverySplit(t *testing.T, forms [][]byte, text, want string, n int64) {
	t.Helper()
	for k := 0; k <= len(text); k++ {
		if out, got := redactChunks(t, forms, []byte(text[:k]), []byte(text[k:])); out != want || got != n {
			t.Fatalf("%q split at %d: %q, %d redactions; want %q, %d", text, k, out, got, want, n)
		}
	}
	var bytewise [][]byte
	for i := range len(text) {
		bytewise = append(bytewise, []byte(text[i:i+1]))
	}
	if out, got := redactChunks(t, forms, bytewise...); out != want || got != n {
		t.Fatalf("%q byte by byte: %q, %d redactions; want %q, %d", text, out, got, want, n)
	}
}

// Each of the three cores, in each encoding, is the run stableRun finds, and none is
// shorter than 10 characters (60 bits of the value) for the shortest value redacted.
func TestBase64Cores(t *testing.T) {
	for n := frame.MinCredentialBytes; n <= 40; n++ {
		value := []byte(strings.Repeat("?~>s3cr3t", 5)[:n]) // '?', '~', '>' spell '+' and '/'
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			cores := base64Cores(enc, value)
			if len(cores) != 3 {
				t.Fatalf("%d cores", len(cores))
			}
			for a, core := range cores {
				x := enc.EncodeToString(append(bytes.Repeat([]byte("p"), a), append(value, 'z')...))
				start, end := stableRun(t, enc, bytes.Repeat([]byte("p"), a), value, []byte("z"))
				if string(core) != x[start:end] {
					t.Errorf("%d bytes at offset %d: core %q, want %q", n, a, core, x[start:end])
				}
				if len(core) < 10 || n == frame.MinCredentialBytes && len(core) != 10 {
					t.Errorf("%d bytes at offset %d: a core of %d characters", n, a, len(core))
				}
			}
		}
	}
}

// A value inside longer base64 data, after 0 to 5 bytes (every alignment, twice) and
// before others, in standard and URL-safe base64, padded or not, for values of each
// length modulo 3: its core is replaced, also when split across writes at any position.
func TestRedactorBase64InsideLongerData(t *testing.T) {
	values := []string{"abcdefgh", "s3cr3t-v9", "?~>?~>?~>?", strings.TrimSpace(testSecret)}
	for _, value := range values {
		forms := credentialForms([]byte(value))
		for _, enc := range []struct {
			name string
			*base64.Encoding
		}{{"std", base64.StdEncoding}, {"raw std", base64.RawStdEncoding}, {"url", base64.URLEncoding}, {"raw url", base64.RawURLEncoding}} {
			for p := range 6 {
				prefix, suffix := []byte("prefix"[:p]), []byte("}\n")
				x := enc.EncodeToString(bytes.Join([][]byte{prefix, []byte(value), suffix}, nil))
				start, end := stableRun(t, enc.WithPadding(base64.NoPadding), prefix, []byte(value), suffix)
				t.Run(fmt.Sprintf("%q after %d bytes, %s: %s", value, p, enc.name, x), func(t *testing.T) {
					wantEverySplit(t, forms, "data: "+x+"\n", "data: "+x[:start]+redactedMark+x[end:]+"\n", 1)
				})
			}
		}
	}
	// The URL-safe cores are their own forms.
	if c := base64Cores(base64.RawURLEncoding, []byte("?~>?~>?~>?")); !bytes.ContainsAny(c[1], "-_") {
		t.Fatalf("the URL-safe core %q has neither - nor _", c[1])
	}
}

// The Authorization: Basic header, as curl -v and git (GIT_TRACE_CURL=1,
// GIT_TRACE_REDACT=0) print it, with the token after user names of each alignment.
func TestRedactorBasicAuth(t *testing.T) {
	const glpat = "glpat-Xq3vR9sLk2Tz8mNw4Yb1"
	const ghp = "ghp_R7kq2Lm9Xw4Tz8Nb3Vc6Yd1Hf5Jg0Ps2Qa7E"
	for _, tc := range []struct {
		name, token, text, want string
	}{
		{
			name:  "curl -v -u user:TOKEN (offset 2)",
			token: glpat,
			text:  "> GET /api/v4/user HTTP/1.1\r\n> Host: gitlab.example\r\n> Authorization: Basic dXNlcjpnbHBhdC1YcTN2UjlzTGsyVHo4bU53NFliMQ==\r\n",
			want:  "> GET /api/v4/user HTTP/1.1\r\n> Host: gitlab.example\r\n> Authorization: Basic dXNlcjp" + redactedMark + "Q==\r\n",
		},
		{
			name:  "git, oauth2:TOKEN (offset 1)",
			token: glpat,
			text:  "12:00:00.000000 http.c:845 => Send header: Authorization: Basic b2F1dGgyOmdscGF0LVhxM3ZSOXNMazJUejhtTnc0WWIx\n",
			want:  "12:00:00.000000 http.c:845 => Send header: Authorization: Basic b2F1dGgyOm" + redactedMark + "\n",
		},
		{
			name:  "git, x-access-token:TOKEN (offset 0: the whole encoding of the token)",
			token: ghp,
			text:  "=> Send header: AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hwX1I3a3EyTG05WHc0VHo4TmIzVmM2WWQxSGY1SmcwUHMyUWE3RQ==\n",
			want:  "=> Send header: AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46" + redactedMark + "\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantEverySplit(t, credentialForms([]byte(tc.token)), tc.text, tc.want, 1)
		})
	}
}
