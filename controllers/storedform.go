package controllers

import (
	"bytes"
	"encoding/json"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// storedForm returns a result's content as the API server stores it, with its JSON. The
// API server decodes the numbers of a custom resource to int64 or float64 and encodes them
// again (1.0 becomes 1, 1E+2 becomes 100, an integer beyond int64 the nearest float64), so
// the result's digest is made of that form: made of the tool's own number text, it would
// not match the stored result. A number no float64 holds (1e400) cannot be stored at all
// (the API server refuses the write): that is an error, and the result is unrepresentable.
func storedForm(content any) (any, []byte, error) {
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, nil, err
	}
	var decoded any
	if err := utiljson.Unmarshal(raw, &decoded); err != nil {
		return nil, nil, err
	}
	if raw, err = json.Marshal(decoded); err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // the pipeline's canonical form keeps number text as json.Number
	var stored any
	if err := dec.Decode(&stored); err != nil {
		return nil, nil, err
	}
	return stored, raw, nil
}
