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
	"fmt"
	"strconv"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

// Keys of Result.Meta set outside normalisation (see also MetaAttempt and its siblings).
const (
	// MetaViolations is the number of schema violations of a SchemaViolation refusal, all
	// of them, also those the message leaves out.
	MetaViolations = "violations"
	// MetaMessageBytes is the full size of a message that was cut to fit its field.
	MetaMessageBytes = "messageBytes"
)

// FreezeResult returns the canonical bytes and digest of a final Result (stage 8), using
// the same canonical JSON as the arguments. The encoded object has the members content,
// error, isError, meta, ok and reason. It fails only when Content holds something JSON
// cannot represent (a NaN, an unsupported Go type, an invalid json.Number or string).
// StoreResult freezes a result as it is stored; FreezeResult of a stored result read back
// from the API server gives that digest again.
func FreezeResult(r Result) (*Frozen, error) {
	f, _, err := freezeResult(r, false)
	return f, err
}

// freezeResult freezes r, its numbers in the API server's stored form when stored (see
// StoreResult), and says where in the canonical text its content ends: the content's
// canonical JSON is text[len(contentPrefix):contentEnd].
func freezeResult(r Result, stored bool) (f *Frozen, contentEnd int, err error) {
	buf := getEncodeBuffer(256)
	defer putEncodeBuffer(buf)
	if *buf, contentEnd, err = encodeResult(*buf, r, stored); err != nil {
		return nil, 0, fmt.Errorf("freezing result: %w", err)
	}
	return newFrozen(*buf, nil), contentEnd, nil
}

// contentPrefix is how the canonical form of a Result begins: content is its first member.
const contentPrefix = `{"content":`

// encodeResult writes the result object with its members already in canonical order,
// which spares building and sorting a map, and returns where its content ends.
func encodeResult(dst []byte, r Result, stored bool) ([]byte, int, error) {
	var err error
	appendContent := canonjson.AppendValue
	if stored {
		appendContent = canonjson.AppendStoredValue
	}
	dst = append(dst, contentPrefix...)
	if dst, err = appendContent(dst, r.Content, 1); err != nil {
		return nil, 0, err
	}
	contentEnd := len(dst)
	dst = append(dst, `,"error":`...)
	if dst, err = canonjson.AppendString(dst, r.Error); err != nil {
		return nil, 0, err
	}
	dst = append(dst, `,"isError":`...)
	dst = strconv.AppendBool(dst, r.IsError)
	dst = append(dst, `,"meta":`...)
	if dst, err = canonjson.AppendValue(dst, r.Meta, 1); err != nil {
		return nil, 0, err
	}
	dst = append(dst, `,"ok":`...)
	dst = strconv.AppendBool(dst, r.OK)
	dst = append(dst, `,"reason":`...)
	if dst, err = canonjson.AppendString(dst, string(r.Reason)); err != nil {
		return nil, 0, err
	}
	return append(dst, '}'), contentEnd, nil
}
