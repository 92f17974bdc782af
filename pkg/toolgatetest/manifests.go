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
	"io/fs"
	"path"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/config/admission"
	"github.com/toolgate/toolgate/config/crd"
)

// CRDs decodes toolgate's CustomResourceDefinitions from the embedded manifests
// (config/crd/bases), in file-name order.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crd.FS, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("no CRDs embedded in config/crd: run make manifests")
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, name := range files {
		data, err := fs.ReadFile(crd.FS, name)
		if err != nil {
			return nil, err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := utilyaml.Unmarshal(data, c); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path.Base(name), err)
		}
		crds = append(crds, c)
	}
	return crds, nil
}

// AdmissionPolicies decodes toolgate's admission policies and their bindings from the
// embedded manifests (config/admission): the toolgate-identity ValidatingAdmissionPolicy and
// the toolgate-requester and toolgate-approver MutatingAdmissionPolicies, and the
// toolgate-cancel, toolgate-record and toolgate-credentials ValidatingAdmissionPolicies,
// policies first.
func AdmissionPolicies() ([]client.Object, error) {
	var policies, bindings []client.Object
	for _, file := range []struct {
		name string
		data []byte
	}{{"identity-policy.yaml", admission.IdentityPolicy}, {"stamp-policy.yaml", admission.StampPolicy},
		{"cancel-policy.yaml", admission.CancelPolicy}, {"record-policy.yaml", admission.RecordPolicy},
		{"credential-policy.yaml", admission.CredentialPolicy}} {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(file.data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", file.name, err)
			}
			obj, binding, err := decodeAdmissionObject(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file.name, err)
			}
			switch {
			case obj == nil:
			case binding:
				bindings = append(bindings, obj)
			default:
				policies = append(policies, obj)
			}
		}
	}
	return append(policies, bindings...), nil
}

// decodeAdmissionObject decodes one document: a policy or a binding (binding true), or nil
// for an empty document.
func decodeAdmissionObject(doc []byte) (obj client.Object, binding bool, err error) {
	var meta metav1.TypeMeta
	if err := utilyaml.Unmarshal(doc, &meta); err != nil {
		return nil, false, fmt.Errorf("decoding: %w", err)
	}
	switch meta.Kind {
	case "":
		return nil, false, nil // an empty document
	case "ValidatingAdmissionPolicy":
		obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		obj, binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, true
	case "MutatingAdmissionPolicy":
		obj = &admissionregistrationv1.MutatingAdmissionPolicy{}
	case "MutatingAdmissionPolicyBinding":
		obj, binding = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, true
	default:
		return nil, false, fmt.Errorf("unexpected kind %q", meta.Kind)
	}
	if err := utilyaml.Unmarshal(doc, obj); err != nil {
		return nil, false, err
	}
	return obj, binding, nil
}
