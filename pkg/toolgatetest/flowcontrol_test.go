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
	"fmt"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/toolgate/toolgate/config/flowcontrol"
)

func TestFlowControlObjectsAreTheOperatorsAndAgentsLevels(t *testing.T) {
	objs, err := FlowControlObjects()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%T/%s", o, o.GetName()))
	}
	want := []string{
		"*v1.PriorityLevelConfiguration/" + flowcontrol.OperatorName,
		"*v1.PriorityLevelConfiguration/" + flowcontrol.AgentsName,
		"*v1.FlowSchema/" + flowcontrol.OperatorName,
		"*v1.FlowSchema/" + flowcontrol.AgentsName,
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("objects %v, want %v (levels first)", got, want)
	}
	op := objs[2].(*flowcontrolv1.FlowSchema)
	sa := op.Spec.Rules[0].Subjects[0].ServiceAccount
	if sa == nil || sa.Namespace != flowcontrol.OperatorNamespace || sa.Name != flowcontrol.OperatorServiceAccount {
		t.Fatalf("operator FlowSchema subject %+v, want ServiceAccount %s/%s", op.Spec.Rules[0].Subjects[0],
			flowcontrol.OperatorNamespace, flowcontrol.OperatorServiceAccount)
	}
	if op.Spec.PriorityLevelConfiguration.Name != flowcontrol.OperatorName {
		t.Fatalf("operator FlowSchema names level %q", op.Spec.PriorityLevelConfiguration.Name)
	}
}

func TestDecodeFlowControlRefusesOtherObjects(t *testing.T) {
	for name, doc := range map[string]string{
		"other kind":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"other version": "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: x}\n",
		"unknown field": "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x}\nspec: {precedence: 3}\n",
	} {
		if _, err := DecodeFlowControl([]byte("---\n" + doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
