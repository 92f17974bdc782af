// Package toolio is the little I/O contract shared by the example tool bodies: read the
// arguments object, write a result, report an error the model should see.
package toolio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// maxArgs bounds what a body reads as arguments (the operator caps them at 120 KiB).
const maxArgs = 1 << 20

// ReadArgsBytes returns the raw arguments: the file the runner wrote
// ($TOOLGATE_ARGS_FILE) when set, else stdin. Empty input reads as {}.
func ReadArgsBytes(stdin io.Reader) ([]byte, error) {
	r := stdin
	if path := os.Getenv(podcontract.EnvArgsFile); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading the arguments: %w", err)
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxArgs+1))
	if err != nil {
		return nil, fmt.Errorf("reading the arguments: %w", err)
	}
	if len(data) > maxArgs {
		return nil, errors.New("the arguments are larger than 1 MiB")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil
	}
	return data, nil
}

// Decode parses the arguments object into v (a pointer to a struct or map).
func Decode(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return errors.New("the arguments must be a JSON object")
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return fmt.Errorf("the arguments are not valid: %w", err)
	}
	return nil
}

// ErrorResult is what a body prints when the call failed in a way the model should see.
type ErrorResult struct {
	IsError bool   `json:"isError"`
	Error   string `json:"error"`
}

// Errorf builds an ErrorResult.
func Errorf(format string, args ...any) ErrorResult {
	return ErrorResult{IsError: true, Error: fmt.Sprintf(format, args...)}
}

// Write encodes v as one JSON document (HTML characters not escaped) followed by a newline.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Main runs a body: it reads the arguments, calls run and prints its result (or the error
// it returned, as an isError object). Only a failure to write stdout exits non-zero.
func Main(run func(args []byte) (any, error)) {
	os.Exit(main(run, os.Stdin, os.Stdout, os.Stderr))
}

func main(run func(args []byte) (any, error), stdin io.Reader, stdout, stderr io.Writer) int {
	var result any
	args, err := ReadArgsBytes(stdin)
	if err == nil {
		result, err = run(args)
	}
	if err != nil {
		result = Errorf("%s", err.Error())
	}
	if raw, ok := result.(Raw); ok {
		_, err = stdout.Write(raw)
	} else {
		err = Write(stdout, result)
	}
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "writing the result:", err)
		return 1
	}
	return 0
}

// Raw is a result written to stdout as it is (plain text, or JSON already encoded).
type Raw []byte
