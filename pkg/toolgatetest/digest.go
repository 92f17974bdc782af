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

package toolgatetest

import (
	"bytes"
	"encoding/json"
	"errors"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// StoredResultDigest recomputes the digest of a call's result from the result as the API
// server stored it. It equals status.resultDigest unless the stored result is not the one
// the digest was made of (e.g. a number the API server re-encoded on the way in).
func StoredResultDigest(call *toolgatev1alpha1.ToolCall) (string, error) {
	res := call.Status.Result
	if res == nil {
		return "", errors.New("the call has no result")
	}
	r := pipeline.Result{OK: res.OK, IsError: res.IsError, Error: res.Error, Reason: pipeline.Reason(res.Reason), Meta: res.Meta}
	if res.Content != nil {
		dec := json.NewDecoder(bytes.NewReader(res.Content.Raw))
		dec.UseNumber()
		if err := dec.Decode(&r.Content); err != nil {
			return "", err
		}
	}
	f, err := pipeline.FreezeResult(r)
	if err != nil {
		return "", err
	}
	return f.Digest(), nil
}
