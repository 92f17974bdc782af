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

// Package flowcontrol embeds toolgate's API Priority and Fairness objects (FlowSchemas and
// PriorityLevelConfigurations for the operator and for agents' ToolCall writes), so that
// tests and benchmarks apply them by importing this package, without file paths.
package flowcontrol

import _ "embed"

// Objects is flowcontrol.yaml: the PriorityLevelConfigurations and FlowSchemas
// toolgate-operator and toolgate-agents, as a multi-document YAML stream (the chart's
// rendering with default values, release toolgate in toolgate-system).
//
//go:embed flowcontrol.yaml
var Objects []byte

const (
	// OperatorName is the FlowSchema and PriorityLevelConfiguration of the operator.
	OperatorName = "toolgate-operator"
	// AgentsName is the FlowSchema and PriorityLevelConfiguration of agents' ToolCall writes.
	AgentsName = "toolgate-agents"
	// OperatorNamespace and OperatorServiceAccount are the ServiceAccount the operator's
	// FlowSchema matches.
	OperatorNamespace      = "toolgate-system"
	OperatorServiceAccount = "toolgate"
)
