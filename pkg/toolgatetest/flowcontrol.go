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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/config/flowcontrol"
)

// FlowControlObjects decodes toolgate's API Priority and Fairness objects from the embedded
// manifests (config/flowcontrol: the chart's defaults, for the ServiceAccount toolgate in
// toolgate-system), PriorityLevelConfigurations first. Start does not apply them.
func FlowControlObjects() ([]client.Object, error) {
	return DecodeFlowControl(flowcontrol.Objects)
}

// DecodeFlowControl decodes the PriorityLevelConfigurations and FlowSchemas
// (flowcontrol.apiserver.k8s.io/v1) of a multi-document YAML stream, such as
// `helm template --show-only templates/flowcontrol.yaml`, levels first; other kinds are
// an error.
func DecodeFlowControl(data []byte) ([]client.Object, error) {
	var levels, schemas []client.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return append(levels, schemas...), nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading flowcontrol objects: %w", err)
		}
		var meta metav1.TypeMeta
		if err := utilyaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("decoding flowcontrol objects: %w", err)
		}
		var obj client.Object
		switch {
		case meta.Kind == "":
			continue // an empty document
		case meta.APIVersion != flowcontrolv1.SchemeGroupVersion.String():
			return nil, fmt.Errorf("flowcontrol objects: unexpected apiVersion %q", meta.APIVersion)
		case meta.Kind == "PriorityLevelConfiguration":
			obj = &flowcontrolv1.PriorityLevelConfiguration{}
			levels = append(levels, obj)
		case meta.Kind == "FlowSchema":
			obj = &flowcontrolv1.FlowSchema{}
			schemas = append(schemas, obj)
		default:
			return nil, fmt.Errorf("flowcontrol objects: unexpected kind %q", meta.Kind)
		}
		if err := utilyaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", meta.Kind, err)
		}
	}
}

// PFClassification is how API Priority and Fairness classified one request: the UIDs of the
// FlowSchema and PriorityLevelConfiguration kube-apiserver names in the response headers
// X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID (empty when a
// response carries none, e.g. a request refused before classification).
type PFClassification struct {
	FlowSchemaUID    types.UID
	PriorityLevelUID types.UID
}

// PFRecorder records the classification of every response of the clients built from a
// config it wrapped. Safe for concurrent use.
type PFRecorder struct {
	mu     sync.Mutex
	last   PFClassification
	counts map[PFClassification]int
}

// Wrap returns a copy of cfg whose transport records each response's classification.
func (r *PFRecorder) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if resp != nil {
				r.note(PFClassification{
					FlowSchemaUID:    types.UID(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)),
					PriorityLevelUID: types.UID(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)),
				})
			}
			return resp, err
		})
	})
	return out
}

func (r *PFRecorder) note(c PFClassification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[PFClassification]int{}
	}
	r.last = c
	r.counts[c]++
}

// Last is the classification of the latest response.
func (r *PFRecorder) Last() PFClassification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Counts is how many responses had each classification.
func (r *PFRecorder) Counts() map[PFClassification]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[PFClassification]int, len(r.counts))
	for c, n := range r.counts {
		out[c] = n
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
