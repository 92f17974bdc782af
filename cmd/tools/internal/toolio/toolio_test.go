package toolio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestReadArgsPrefersTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(path, []byte(`{"from":"file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(podcontract.EnvArgsFile, path)
	got, err := ReadArgsBytes(strings.NewReader(`{"from":"stdin"}`))
	if err != nil || string(got) != `{"from":"file"}` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadArgsStdinAndEmpty(t *testing.T) {
	t.Setenv(podcontract.EnvArgsFile, "")
	got, err := ReadArgsBytes(strings.NewReader(" \n"))
	if err != nil || string(got) != "{}" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestDecodeRejectsNonObjects(t *testing.T) {
	var v map[string]any
	for _, in := range []string{`[]`, `"x"`, `1`, `{`} {
		if err := Decode([]byte(in), &v); err == nil {
			t.Errorf("%s: want an error", in)
		}
	}
}

func TestMainPrintsErrorsAsIsError(t *testing.T) {
	t.Setenv(podcontract.EnvArgsFile, "")
	var out, errOut bytes.Buffer
	code := main(func([]byte) (any, error) { return nil, errors.New("no <such> file") },
		strings.NewReader("{}"), &out, &errOut)
	if code != 0 || out.String() != `{"isError":true,"error":"no <such> file"}`+"\n" {
		t.Fatalf("code %d, stdout %q", code, out.String())
	}
}

func TestMainRaw(t *testing.T) {
	t.Setenv(podcontract.EnvArgsFile, "")
	var out bytes.Buffer
	main(func(a []byte) (any, error) { return Raw(a), nil }, strings.NewReader(`{"a":1}`), &out, &out)
	if out.String() != `{"a":1}` {
		t.Fatalf("got %q", out.String())
	}
}
