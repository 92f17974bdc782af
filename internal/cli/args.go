package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// argumentInput is where a call's arguments come from: a JSON object (from --args or
// --args-file, named by Source for messages) and key=value pairs set on top of it.
type argumentInput struct {
	JSON   []byte
	Source string
	Pairs  []string
}

// buildArguments returns the call's arguments as one JSON object. Without pairs the JSON
// is passed on as written (the operator canonicalises it); with pairs, each key is set at
// the top level, its value parsed as JSON when it parses (numbers, true, objects …) and
// taken as a string otherwise. Every error is a usage error.
func buildArguments(in argumentInput) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if in.JSON != nil {
		if err := decodeObject(in.JSON, in.Source, &obj); err != nil {
			return nil, err
		}
		if len(in.Pairs) == 0 {
			return bytes.TrimSpace(in.JSON), nil
		}
	}
	for _, pair := range in.Pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, Usagef("argument %q is not key=value", pair)
		}
		obj[key] = pairValue(value)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, Usagef("encoding the arguments: %w", err)
	}
	return out, nil
}

// pairValue is value as JSON when it is valid JSON, else value as a JSON string.
func pairValue(value string) json.RawMessage {
	if trimmed := strings.TrimSpace(value); trimmed != "" && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	s, _ := json.Marshal(value) // a string always marshals
	return s
}

// decodeObject decodes data, which must be one JSON object, reporting where it is not.
func decodeObject(data []byte, source string, obj *map[string]json.RawMessage) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	err := json.Unmarshal(data, obj)
	switch {
	case err == nil && *obj == nil:
		return Usagef("%s: the arguments must be a JSON object, not null", source)
	case err == nil:
		return nil
	case errors.As(err, &syntax):
		return Usagef("%s: invalid JSON at %s: %s", source, position(data, syntax.Offset), syntax.Error())
	case errors.As(err, &typ):
		return Usagef("%s: the arguments must be a JSON object, not %s", source, typ.Value)
	}
	return Usagef("%s: %w", source, err)
}

// position renders json.SyntaxError's offset (the bytes read, the bad one included) as
// "line L, column C (offset N)": 1-based, columns counted in bytes, pointing at the byte
// that stopped the parser.
func position(data []byte, offset int64) string {
	idx := min(max(offset-1, 0), int64(len(data)))
	before := data[:idx]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d (offset %d)", line, col, offset)
}
