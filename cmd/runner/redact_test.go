package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// testSecret has characters that every escaping changes (JSON, HTML, URL) and ends, as a
// Secret's value often does, with a newline.
const testSecret = `s3cr3t "t0k/en" <a&b>?+=` + "\n"

// redactChunks writes chunks to a redactor of forms, closes it and returns what it wrote.
func redactChunks(t testing.TB, forms [][]byte, chunks ...[]byte) (string, int64) {
	t.Helper()
	var buf bytes.Buffer
	r := newRedactor(&buf, forms)
	for _, c := range chunks {
		if n, err := r.Write(c); n != len(c) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String(), r.count
}

// naiveRedact is the redactor's specification, the whole stream at once: at each
// position the longest form that matches is replaced, and scanning resumes after it.
func naiveRedact(s []byte, forms [][]byte) (string, int64) {
	var out []byte
	var n int64
next:
	for i := 0; i < len(s); {
		for _, f := range forms { // longest first
			if bytes.HasPrefix(s[i:], f) {
				out = append(out, redactedMark...)
				n++
				i += len(f)
				continue next
			}
		}
		out = append(out, s[i])
		i++
	}
	return string(out), n
}

func jsonEscaped(t testing.TB, s string, html bool) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(buf.String(), "\n"), `"`)[1:]
}

func TestCredentialForms(t *testing.T) {
	forms := credentialForms([]byte(testSecret))
	got := map[string]bool{}
	for i, f := range forms {
		if got[string(f)] {
			t.Errorf("form %q twice", f)
		}
		got[string(f)] = true
		if len(f) < frame.MinCredentialBytes {
			t.Errorf("form %q shorter than %d bytes", f, frame.MinCredentialBytes)
		}
		if i > 0 && len(f) > len(forms[i-1]) {
			t.Errorf("forms not longest first: %q after %q", f, forms[i-1])
		}
	}
	want := map[string]bool{}
	for _, v := range []string{testSecret, strings.TrimSpace(testSecret)} {
		for _, f := range []string{
			v,
			base64.StdEncoding.EncodeToString([]byte(v)),
			base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)),
			base64.RawURLEncoding.EncodeToString([]byte(v)),
			hex.EncodeToString([]byte(v)),
			strings.ToUpper(hex.EncodeToString([]byte(v))),
			jsonEscaped(t, v, true),
			jsonEscaped(t, v, false),
		} {
			want[f] = true
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for a := range 3 { // the value inside longer base64 data, at each alignment
				prefix := bytes.Repeat([]byte("p"), a)
				x := enc.EncodeToString([]byte(string(prefix) + v + "z"))
				start, end := stableRun(t, enc, prefix, []byte(v), []byte("z"))
				want[x[start:end]] = true
			}
		}
	}
	// The escapings spelled out.
	for _, f := range []string{
		`s3cr3t+%22t0k%2Fen%22+%3Ca%26b%3E%3F%2B%3D`, `s3cr3t+%22t0k%2Fen%22+%3Ca%26b%3E%3F%2B%3D%0A`, // query
		`s3cr3t%20%22t0k%2Fen%22%20%3Ca&b%3E%3F+=`, `s3cr3t%20%22t0k%2Fen%22%20%3Ca&b%3E%3F+=%0A`, // path
		`s3cr3t \"t0k/en\" \u003ca\u0026b\u003e?+=`, `s3cr3t \"t0k/en\" \u003ca\u0026b\u003e?+=\n`, // JSON
		`s3cr3t \"t0k/en\" <a&b>?+=`, `s3cr3t \"t0k/en\" <a&b>?+=\n`, // JSON without HTML escaping
	} {
		if !want[f] {
			want[f] = true
		}
	}
	for f := range want {
		if !got[f] {
			t.Errorf("%q is not a form", f)
		}
	}
	for f := range got {
		if !want[f] {
			t.Errorf("unexpected form %q", f)
		}
	}
	// A value without surrounding white space has no trimmed forms; one of letters and
	// digits escapes to itself, and its base64 (18 bytes, no '+' or '/') is the same in
	// all four and is its core at offset 0: the value, one base64, two more cores, two hex.
	if got := credentialForms([]byte("abcdefgh12345678zz")); len(got) != 6 {
		t.Errorf("forms of a plain value: %q", got)
	}
}

// Every form of the credential is redacted, in stdout's text and in stderr's, and counted.
func TestRedactorEveryForm(t *testing.T) {
	forms := credentialForms([]byte(testSecret))
	for _, f := range forms {
		out, n := redactChunks(t, forms, []byte("before "+string(f)+" after"))
		if out != "before "+redactedMark+" after" || n != 1 {
			t.Errorf("form %q: %q, %d redactions", f, out, n)
		}
	}
}

// A form split across writes, at every offset, and written one byte at a time, is redacted.
func TestRedactorSplitAcrossWrites(t *testing.T) {
	forms := credentialForms([]byte(testSecret))
	for _, f := range forms {
		text := []byte("x" + string(f) + "y")
		want := "x" + redactedMark + "y"
		for k := 0; k <= len(text); k++ {
			if out, n := redactChunks(t, forms, text[:k], text[k:]); out != want || n != 1 {
				t.Fatalf("form %q split at %d: %q, %d redactions", f, k, out, n)
			}
		}
		var bytewise [][]byte
		for i := range text {
			bytewise = append(bytewise, text[i:i+1])
		}
		if out, n := redactChunks(t, forms, bytewise...); out != want || n != 1 {
			t.Fatalf("form %q byte by byte: %q, %d redactions", f, out, n)
		}
	}
}

func TestRedactorOccurrences(t *testing.T) {
	const r = redactedMark
	for _, tc := range []struct {
		name   string
		creds  []string
		writes []string
		want   string
		n      int64
	}{
		{"none", []string{"abcdefgh"}, []string{"hello, world\n"}, "hello, world\n", 0},
		{"alone", []string{"abcdefgh"}, []string{"abcdefgh"}, r, 1},
		{"adjacent", []string{"abcdefgh"}, []string{"abcdefghabcdefgh"}, r + r, 2},
		{"adjacent, split", []string{"abcdefgh"}, []string{"abcdefghabcd", "efgh"}, r + r, 2},
		{"overlapping: the first wins", []string{"abcdabcd"}, []string{"abcdabcdabcd"}, r + "abcd", 1},
		{"a false start", []string{"abcdefgh"}, []string{"abcdefgabcdefgh"}, "abcdefg" + r, 1},
		{"a false start, split", []string{"abcdefgh"}, []string{"abcdefga", "bcdefgh"}, "abcdefg" + r, 1},
		{"repeated letter", []string{"aaaaaaaa"}, []string{"aaaaaaaaa"}, r + "a", 1},
		{"longest wins", []string{"abcdefgh", "abcdefghijkl"}, []string{"abcdefghijkl"}, r, 1},
		{"longest wins, split", []string{"abcdefgh", "abcdefghijkl"}, []string{"abcdefgh", "ijkl"}, r, 1},
		{"the shorter, at the end", []string{"abcdefgh", "abcdefghijkl"}, []string{"abcdefgh", "ij"}, r + "ij", 1},
		{"two credentials", []string{"abcdefgh", "12345678"}, []string{"x12345678 abcdefgh\n"}, "x" + r + " " + r + "\n", 2},
		{"a prefix at the end", []string{"abcdefgh"}, []string{"xyz", "abcdefg"}, "xyzabcdefg", 0},
		{"the untrimmed value", []string{"abcdefgh\n"}, []string{"abcdefgh\n", "abcdefgh."}, r + r + ".", 2},
		{"empty writes", []string{"abcdefgh"}, []string{"", "abcd", "", "efgh", ""}, r, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var creds []credential
			for _, c := range tc.creds {
				creds = append(creds, credential{name: "c", value: []byte(c)})
			}
			forms := redactionForms(creds)
			var chunks [][]byte
			for _, w := range tc.writes {
				chunks = append(chunks, []byte(w))
			}
			out, n := redactChunks(t, forms, chunks...)
			if out != tc.want || n != tc.n {
				t.Fatalf("%q: got %q, %d redactions; want %q, %d", tc.writes, out, n, tc.want, tc.n)
			}
			if ref, rn := naiveRedact([]byte(strings.Join(tc.writes, "")), forms); ref != out || rn != n {
				t.Fatalf("the reference gives %q, %d", ref, rn)
			}
		})
	}
}

// The redactor writes at once what cannot be the start of a form (the Pod log is not held
// back), and holds back only a possible start.
func TestRedactorHoldsBackOnlyAPossibleStart(t *testing.T) {
	var buf bytes.Buffer
	r := newRedactor(&buf, redactionForms([]credential{{value: []byte("abcdefgh")}}))
	_, _ = r.Write([]byte("progress: 10%\n"))
	if buf.String() != "progress: 10%\n" {
		t.Fatalf("wrote %q", buf.String())
	}
	_, _ = r.Write([]byte("next abc"))
	if buf.String() != "progress: 10%\nnext " {
		t.Fatalf("wrote %q", buf.String())
	}
	_ = r.Close()
	if buf.String() != "progress: 10%\nnext abc" {
		t.Fatalf("wrote %q", buf.String())
	}
}

func TestRedactOutputWithoutCredentials(t *testing.T) {
	out, errs := &headWriter{limit: 10}, &tailWriter{limit: 10}
	o, e, count := redactOutput(redactionForms(nil), out, errs)
	if o != out || e != errs || count() != 0 {
		t.Fatal("without credentials the writers are not the body's own")
	}
}

func TestReadCredentials(t *testing.T) {
	file := func(i int) string { return podcontract.EnvSecretFilePrefix + strconv.Itoa(i) }
	for _, tc := range []struct {
		name  string
		env   map[string]string
		creds []credential
		err   string // in the error; "" for none
	}{
		{name: "none", env: map[string]string{}},
		{name: "empty lists", env: map[string]string{podcontract.EnvSecretEnv: "", podcontract.EnvSecretFiles: ""}},
		{
			name: "env and files",
			env: map[string]string{
				podcontract.EnvSecretEnv: "API_TOKEN, DB_PASSWORD", podcontract.EnvSecretFiles: "token,ca.pem",
				"API_TOKEN": "t", "DB_PASSWORD": "", file(0): "f0", file(1): "f1",
			},
			creds: []credential{{"API_TOKEN", []byte("t")}, {"DB_PASSWORD", []byte("")}, {"file token", []byte("f0")}, {"file ca.pem", []byte("f1")}},
		},
		{name: "env missing", env: map[string]string{podcontract.EnvSecretEnv: "API_TOKEN"}, err: "API_TOKEN, which is not set"},
		{name: "file missing", env: map[string]string{podcontract.EnvSecretFiles: "a,b", file(0): "x"}, err: "names b, but " + file(1) + " is not set"},
		{name: "empty name", env: map[string]string{podcontract.EnvSecretFiles: "a,,b"}, err: "empty name at position 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			creds, err := readCredentials(lookupEnvFrom(tc.env))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if tc.err == "" && fmt.Sprint(creds) != fmt.Sprint(tc.creds) {
				t.Fatalf("credentials %q, want %q", creds, tc.creds)
			}
		})
	}
}

func TestCheckCredentials(t *testing.T) {
	for _, tc := range []struct {
		value string
		err   string
	}{
		{"12345678", ""},
		{"  12345678\n", ""},
		{"", "credential X is 0 bytes; at least 8 are needed to redact it"},
		{"abc", "credential X is 3 bytes; at least 8 are needed to redact it"},
		{" 1234567 \n", "credential X is 7 bytes"},
	} {
		err := checkCredentials([]credential{{name: "X", value: []byte(tc.value)}})
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %v, want %q", tc.value, err, tc.err)
		}
		if err != nil && tc.value != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.value)) {
			t.Errorf("the error names the value: %v", err)
		}
	}
}

func TestBodyEnvironStripsRunnerOnly(t *testing.T) {
	env := []string{
		"PATH=/bin", "API_TOKEN=secret-value", podcontract.EnvSecretEnv + "=API_TOKEN",
		podcontract.EnvSecretFiles + "=token", podcontract.EnvSecretFilePrefix + "0=secret-file",
		podcontract.EnvSecretFilePrefix + "12=x", podcontract.EnvAttemptKey + "=k", podcontract.EnvHandoverKeys + "=p",
		podcontract.EnvSecretFiles + "X=kept", // another name
	}
	got := bodyEnviron(env)
	want := []string{"PATH=/bin", "API_TOKEN=secret-value", podcontract.EnvSecretFiles + "X=kept"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("body environment %q, want %q", got, want)
	}
}

// withSecretEnv makes the invocation's body get value as a credential in API_TOKEN.
func withSecretEnv(in *invocation, value string) {
	in.env[podcontract.EnvSecretEnv] = "API_TOKEN"
	in.env["API_TOKEN"] = value
}

// wantNowhere fails when a form of value is in what the runner wrote.
func wantNowhere(t *testing.T, o outcome, value string) {
	t.Helper()
	js, err := json.Marshal(o.frame)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range credentialForms([]byte(value)) {
		for where, b := range map[string][]byte{"termination message": o.term, "log": o.stdout, "stderr": o.stderr, "frame": js} {
			if bytes.Contains(b, f) {
				t.Errorf("the %s holds the credential as %q", where, f)
			}
		}
	}
}

// A body printing the value, its base64 and its JSON escaping: three redactions, and the
// value is nowhere in the frame or the log.
func TestCredentialRedactedFromStdout(t *testing.T) {
	trimmed := strings.TrimSpace(testSecret)
	in := newInvocation(t, sh(`printf 'plain=%s b64=%s json=%s\n' "$API_TOKEN" "$B64" "$JSON"`)...)
	withSecretEnv(in, trimmed)
	in.env["B64"] = base64.StdEncoding.EncodeToString([]byte(trimmed))
	in.env["JSON"] = jsonEscaped(t, trimmed, true)
	o := in.run()
	want := "plain=" + redactedMark + " b64=" + redactedMark + " json=" + redactedMark + "\n"
	if o.code != 0 || o.frame.Reason != "" || o.frame.Stdout != want {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if o.frame.Redactions != 3 || o.frame.StdoutBytes != int64(len(want)) || o.frame.Truncated {
		t.Fatalf("redactions %d stdoutBytes %d truncated %v", o.frame.Redactions, o.frame.StdoutBytes, o.frame.Truncated)
	}
	wantNowhere(t, o, testSecret)
}

// Stderr is redacted before the tail is kept and before it reaches the Pod log, also when
// the body writes the value in two writes; a start of the value that the output ends
// with is no credential, and is kept.
func TestCredentialRedactedFromStderr(t *testing.T) {
	value := strings.TrimSpace(testSecret)
	in := newInvocation(t, sh(`printf 'a %s\n' "$API_TOKEN" >&2; printf 'b %s' "$HEAD" >&2; sleep 0.2; printf '%s c\n' "$TAIL" >&2; printf 'end %s' "$HEAD" >&2; printf 'done %s' "$HEAD"`)...)
	withSecretEnv(in, value)
	in.env["HEAD"], in.env["TAIL"] = value[:5], value[5:]
	o := in.run()
	want := "a " + redactedMark + "\nb " + redactedMark + " c\nend " + value[:5]
	if o.code != 0 || o.frame.Stdout != "done "+value[:5] || o.frame.StderrTail != want || string(o.stderr) != want {
		t.Fatalf("exit %d, tail %q, log %q", o.code, o.frame.StderrTail, o.stderr)
	}
	if o.frame.Redactions != 2 || o.frame.StderrBytes != int64(len(want)) {
		t.Fatalf("redactions %d stderrBytes %d", o.frame.Redactions, o.frame.StderrBytes)
	}
	wantNowhere(t, o, testSecret)
}

// The output limit applies to the redacted output: stdoutBytes and truncated describe
// what the frame's stdout is a prefix of.
func TestCredentialRedactedBeforeTheLimit(t *testing.T) {
	in := newInvocation(t, sh(`printf '%s tail' "$API_TOKEN"`)...)
	withSecretEnv(in, strings.TrimSpace(testSecret))
	in.env[podcontract.EnvMaxOutput] = "12"
	o := in.run()
	full := redactedMark + " tail"
	if o.frame.Stdout != full[:12] || !o.frame.Truncated || o.frame.StdoutBytes != int64(len(full)) || o.frame.Redactions != 1 {
		t.Fatalf("frame %+v", o.frame)
	}
}

// Secret files: the value of TOOLGATE_SECRET_FILE_<i> (untrimmed, as a file holds it) is
// redacted, and those variables and the lists are not in the body's environment.
func TestSecretFilesRedactedAndHidden(t *testing.T) {
	in := newInvocation(t, sh(`env; printf '%s' "$VALUE"`)...)
	in.env[podcontract.EnvSecretFiles] = "token,other"
	in.env[podcontract.EnvSecretFilePrefix+"0"] = testSecret
	in.env[podcontract.EnvSecretFilePrefix+"1"] = "another-secret-value"
	in.env["VALUE"] = testSecret // the body read the file
	o := in.run()
	if o.code != 0 || o.frame.Reason != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	for _, name := range []string{podcontract.EnvSecretFiles, podcontract.EnvSecretEnv, podcontract.EnvSecretFilePrefix, podcontract.EnvAttemptKey} {
		if strings.Contains(o.frame.Stdout, name) {
			t.Errorf("the body's environment has %s: %s", name, o.frame.Stdout)
		}
	}
	if !strings.Contains(o.frame.Stdout, "VALUE="+redactedMark+"\n") || !strings.HasSuffix(o.frame.Stdout, "\n"+redactedMark) {
		t.Fatalf("stdout %q", o.frame.Stdout)
	}
	// the value in env's output and in the printf: untrimmed, each is one form
	if o.frame.Redactions != 2 {
		t.Fatalf("redactions %d", o.frame.Redactions)
	}
	wantNowhere(t, o, testSecret)
	wantNowhere(t, o, "another-secret-value")
}

// The body's own variables that TOOLGATE_SECRET_ENV names stay in its environment.
func TestSecretEnvStaysForTheBody(t *testing.T) {
	in := newInvocation(t, sh(`[ "$API_TOKEN" = "$EXPECTED" ] && echo same; [ -z "$`+podcontract.EnvSecretEnv+`" ] && echo unlisted`)...)
	withSecretEnv(in, "a-long-enough-token")
	in.env["EXPECTED"] = "a-long-enough-token"
	if o := in.run(); o.frame.Stdout != "same\nunlisted\n" || o.frame.Redactions != 0 {
		t.Fatalf("frame %+v", o.frame)
	}
}

// A credential too short to redact: the body does not run, and the error names the
// variable or file, never the value.
func TestCredentialTooShortNotRun(t *testing.T) {
	for name, set := range map[string]func(in *invocation){
		"env":         func(in *invocation) { withSecretEnv(in, "abc") },
		"env, padded": func(in *invocation) { withSecretEnv(in, "  abc  \n") },
		"env, empty":  func(in *invocation) { withSecretEnv(in, "") },
		"file": func(in *invocation) {
			in.env[podcontract.EnvSecretFiles] = "ok,token"
			in.env[podcontract.EnvSecretFilePrefix+"0"] = "long enough value"
			in.env[podcontract.EnvSecretFilePrefix+"1"] = "abc\n"
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := newInvocation(t, sh(`touch "$MARK"`)...)
			mark := filepath.Join(in.dir, "ran")
			in.env["MARK"] = mark
			set(in)
			o := in.run()
			wantReason(t, o, frame.ExitRunnerError, frame.ReasonCredentialTooShort)
			wantName := "credential API_TOKEN is "
			if name == "file" {
				wantName = "credential file token is 3 bytes"
			}
			if !strings.Contains(o.frame.Error, wantName) || !strings.Contains(o.frame.Error, "at least 8 are needed to redact it") {
				t.Errorf("error %q", o.frame.Error)
			}
			if strings.Contains(o.frame.Error, "abc") || bytes.Contains(o.stderr, []byte("abc")) {
				t.Errorf("the value is in the error or the log: %q %q", o.frame.Error, o.stderr)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the body ran")
			}
			if _, err := os.Stat(in.env[podcontract.EnvArgsFile]); err == nil {
				t.Fatal("the arguments were written")
			}
		})
	}
}

// The runner's own error text is redacted too: here a command named by a credential (as
// the kubelet expands $(API_TOKEN) in a command) that cannot be found.
func TestCredentialRedactedFromError(t *testing.T) {
	in := newInvocation(t, "--", "/no/such/dir/long-enough-value")
	withSecretEnv(in, "long-enough-value")
	o := in.run()
	wantReason(t, o, frame.ExitNotFound, frame.ReasonCommandNotFound)
	if !strings.Contains(o.frame.Error, "/no/such/dir/"+redactedMark) || o.frame.Redactions != 0 {
		t.Fatalf("error %q, %d redactions", o.frame.Error, o.frame.Redactions)
	}
	wantNowhere(t, o, "long-enough-value")
}

// A listed variable that is not set: the Pod is not what the operator built.
func TestCredentialMissingIsInvalidConfiguration(t *testing.T) {
	for name, set := range map[string]func(in *invocation){
		"env":  func(in *invocation) { in.env[podcontract.EnvSecretEnv] = "API_TOKEN" },
		"file": func(in *invocation) { in.env[podcontract.EnvSecretFiles] = "token" },
	} {
		t.Run(name, func(t *testing.T) {
			in := newInvocation(t, sh(`touch "$MARK"`)...)
			mark := filepath.Join(in.dir, "ran")
			in.env["MARK"] = mark
			set(in)
			wantReason(t, in.run(), frame.ExitRunnerError, frame.ReasonInvalidConfiguration)
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the body ran")
			}
		})
	}
}

// A frame carried in the log: the signed pointer and the full frame both count the
// redactions.
func TestRedactionsInLogFrame(t *testing.T) {
	data := make([]byte, 64<<10)
	_, _ = rand.Read(data)
	in := newInvocation(t, sh(`cat "$DATA"; printf '%s' "$API_TOKEN"; printf '%s' "$API_TOKEN" >&2`)...)
	in.env["DATA"] = filepath.Join(in.dir, "data")
	if err := os.WriteFile(in.env["DATA"], data, 0o644); err != nil {
		t.Fatal(err)
	}
	withSecretEnv(in, strings.TrimSpace(testSecret))
	o := in.run()
	ptr, needLog, err := (frame.Decoder{Key: testAttemptKey}).DecodeTermination(string(o.term))
	if err != nil || !needLog {
		t.Fatalf("pointer: needLog %v, %v", needLog, err)
	}
	if ptr.Redactions != 2 || o.frame.Redactions != 2 {
		t.Fatalf("pointer %d, frame %d redactions", ptr.Redactions, o.frame.Redactions)
	}
	if got := o.stdoutData(t); !bytes.Equal(got, append(data, redactedMark...)) {
		t.Fatal("stdout not the data and the mark")
	}
	wantNowhere(t, o, testSecret)
}

// Warm mode reads the credentials at start and refuses one too short after the Handover,
// in a frame signed for its call, without running the body.
func TestWarmCredentials(t *testing.T) {
	h := authenticated(frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(testArgs))}, testKey)

	in := newInvocation(t, sh(`printf '%s' "$API_TOKEN"`)...)
	withSecretEnv(in, "long enough value")
	o, _ := runWarm(t, in, handoverLine(t, h))
	if o.code != 0 || o.frame.Stdout != redactedMark || o.frame.Redactions != 1 {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}

	in = newInvocation(t, sh(`touch "$MARK"`)...)
	mark := filepath.Join(in.dir, "ran")
	in.env["MARK"] = mark
	withSecretEnv(in, "short")
	o, _ = runWarm(t, in, handoverLine(t, h))
	wantReason(t, o, frame.ExitRunnerError, frame.ReasonCredentialTooShort)
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the body ran")
	}
}

// BenchmarkRedactor: 1 and 8 credentials (their forms), over 1 MiB of text lines of
// random base64 (the worst plain text: every byte may start a form), written 32 KiB at a
// time as io.Copy does; without a credential in it, and with one in every line.
func BenchmarkRedactor(b *testing.B) {
	var creds []credential
	for i := range 8 {
		v := make([]byte, 24)
		_, _ = rand.Read(v)
		creds = append(creds, credential{name: strconv.Itoa(i), value: []byte(base64.RawURLEncoding.EncodeToString(v))})
	}
	raw := make([]byte, 3<<18)
	_, _ = rand.Read(raw)
	clean := []byte(base64.StdEncoding.EncodeToString(raw)) // 1 MiB
	for i := 80; i < len(clean); i += 81 {
		clean[i] = '\n'
	}
	for _, n := range []int{1, 8} {
		forms := redactionForms(creds[:n])
		dense := bytes.Clone(clean)
		for i := 0; i+81 <= len(dense); i += 81 {
			copy(dense[i+20:], creds[(i/81)%n].value) // 32 bytes
		}
		for _, text := range []struct {
			name string
			b    []byte
		}{{"clean", clean}, {"dense", dense}} {
			b.Run(fmt.Sprintf("creds=%d/%s", n, text.name), func(b *testing.B) {
				r := newRedactor(discard{}, forms)
				b.SetBytes(int64(len(text.b)))
				b.ReportAllocs()
				for b.Loop() {
					for off := 0; off < len(text.b); off += 32 << 10 {
						_, _ = r.Write(text.b[off:min(off+32<<10, len(text.b))])
					}
					_ = r.Close()
				}
			})
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// chunksOf splits data into writes of size bytes (the last one shorter).
func chunksOf(data []byte, size int) [][]byte {
	var chunks [][]byte
	for off := 0; off < len(data); off += size {
		chunks = append(chunks, data[off:min(off+size, len(data))])
	}
	return chunks
}

// FuzzRedactor: whatever the output and however it is split into writes, the redactor
// writes what the reference (the whole stream at once) does, never a form of the
// credential, and, without a credential, the output unchanged; and the value inside
// longer base64 data (between two parts of the output) leaves no core in it.
func FuzzRedactor(f *testing.F) {
	f.Add([]byte("plain output\n"), []byte(""), uint8(3))
	f.Add([]byte("token=s3cr3t-value; again s3cr3t-value"), []byte("s3cr3t-value"), uint8(5))
	f.Add([]byte("czNjcjN0LXZhbHVl and 73336372337400"), []byte("s3cr3t-value\n"), uint8(1))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaa"), []byte("aaaaaaaa"), uint8(7))
	f.Add([]byte("oauth2:"), []byte("glpat-Xq3vR9sLk2Tz8mNw4Yb1"), uint8(7))
	f.Add([]byte("user:\n"), []byte("?~>?~>?~>?"), uint8(0x85))
	f.Fuzz(func(t *testing.T, data, value []byte, chunk uint8) {
		var forms [][]byte
		if len(bytes.TrimSpace(value)) >= frame.MinCredentialBytes {
			forms = credentialForms(value)
		}
		size := int(chunk%64) + 1
		out, n := redactChunks(t, forms, chunksOf(data, size)...)
		if len(forms) == 0 {
			if out != string(data) || n != 0 {
				t.Fatalf("without a credential %q became %q", data, out)
			}
			return
		}
		ref, rn := naiveRedact(data, forms)
		if out != ref || n != rn {
			t.Fatalf("split by %d: %q (%d), the whole at once: %q (%d)", size, out, n, ref, rn)
		}
		for _, f := range forms {
			// A form that shares bytes with the mark could be spelled by the mark and the
			// output around it; the body wrote no more of it than a part.
			if bytes.ContainsAny(f, "[]") || strings.Contains(redactedMark, string(f)) {
				continue
			}
			if strings.Contains(out, string(f)) {
				t.Fatalf("the output %q holds the form %q", out, f)
			}
		}
		fuzzBase64Inside(t, forms, data, value, chunk)
	})
}

// fuzzBase64Inside: value after the first chunk%(len(data)+1) bytes of data and before
// the rest (and one more byte), in standard or URL-safe base64 (chunk's top bit), is
// redacted as the reference does, and its core (stableRun) is not in the output.
func fuzzBase64Inside(t *testing.T, forms [][]byte, data, value []byte, chunk uint8) {
	k := int(chunk) % (len(data) + 1)
	enc := base64.StdEncoding
	if chunk&0x80 != 0 {
		enc = base64.URLEncoding
	}
	prefix, suffix := data[:k], append(bytes.Clone(data[k:]), '.')
	x := enc.EncodeToString(bytes.Join([][]byte{prefix, value, suffix}, nil))
	start, end := stableRun(t, enc.WithPadding(base64.NoPadding), prefix, value, suffix)
	out, n := redactChunks(t, forms, chunksOf([]byte(x), int(chunk%64)+1)...)
	if ref, rn := naiveRedact([]byte(x), forms); out != ref || n != rn {
		t.Fatalf("%q: %q (%d), the whole at once: %q (%d)", x, out, n, ref, rn)
	}
	if strings.Contains(out, x[start:end]) {
		t.Fatalf("the output %q holds the core %q of %q", out, x[start:end], x)
	}
}
