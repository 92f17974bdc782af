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

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Well-known labels and annotations toolgate puts on the objects it creates, and the name
// of the tool container, for clients (pkg/agentclient, the CLI, the MCP gateway). Those of
// Jobs and Pods are the Pod contract's (pkg/podcontract, their one home), re-exported here.
const (
	// LabelManagedBy is app.kubernetes.io/managed-by, ManagedByValue on toolgate's Jobs and Pods.
	LabelManagedBy = podcontract.LabelManagedBy
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = podcontract.ManagedByValue
	// LabelCall on a Job or Pod is CallLabelValue of the call it runs for.
	LabelCall = podcontract.LabelCall
	// LabelAttempt on a Job or Pod is the attempt number.
	LabelAttempt = podcontract.LabelAttempt
	// LabelTool on a Job or Pod is the tool name, hashed when it is no label value.
	LabelTool = podcontract.LabelTool
	// LabelNetwork on a tool Pod is its sandbox network mode.
	LabelNetwork = podcontract.LabelNetwork
	// AnnotationArgDigest on a Job or Pod is the call's status.argumentsDigest.
	AnnotationArgDigest = podcontract.AnnotationArgDigest
	// AnnotationTool carries the tool's model-facing name exactly (LabelTool may be hashed).
	AnnotationTool = podcontract.AnnotationTool
	// AnnotationCallName carries the full call name on Jobs and Pods (labels are limited to 63).
	AnnotationCallName = podcontract.AnnotationCallName
	// LabelCreatedBy on a ToolCall names the client that made it ("toolgate-cli", "toolgate-mcp").
	LabelCreatedBy = "toolgate.dev/created-by"
	// AnnotationTraceparent on a ToolCall is the caller's W3C trace context (a traceparent
	// header value, "00-<trace-id>-<span-id>-<flags>"): the operator's spans of the call join
	// that trace, under that span. The CLI and the MCP gateway set it.
	AnnotationTraceparent = "toolgate.dev/traceparent"
	// EnvTraceparent is the tool body's environment variable holding the execution span's
	// traceparent, when the operator traces.
	EnvTraceparent = podcontract.EnvTraceparent
	// FinalizerRecord on a ToolCall holds it until the operator has recorded its end: a call
	// deleted before it finished has its body stopped and a terminal result and audit record
	// written first. Only the operator adds or removes it.
	FinalizerRecord = "toolgate.dev/record"
	// ToolContainerName is the body's container: the tool's image, the runner's key-less side
	// and, under it, the tool.
	ToolContainerName = podcontract.ToolContainerName
	// SignerContainerName is the container that signs the result; its log has the body's
	// stderr (redacted), its termination message the frame.
	SignerContainerName = podcontract.SignerContainerName
)

// labelValueMax is the longest label value (validation.LabelValueMaxLength).
const labelValueMax = 63

// CallLabelValue is the value of LabelCall for a call: its name when that fits a label,
// else a cut name and a hash of the whole.
func CallLabelValue(callName string) string {
	if len(callName) <= labelValueMax {
		return callName
	}
	sum := sha256.Sum256([]byte(callName))
	return strings.TrimRight(callName[:52], ".-") + "-" + hex.EncodeToString(sum[:])[:8]
}
