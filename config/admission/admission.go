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

// Package admission embeds toolgate's admission policies and their bindings so that
// tests and tools apply them by importing this package, without file paths.
package admission

import _ "embed"

// IdentityPolicy is identity-policy.yaml: the toolgate-identity ValidatingAdmissionPolicy
// and its ValidatingAdmissionPolicyBinding, as a multi-document YAML stream.
//
//go:embed identity-policy.yaml
var IdentityPolicy []byte

// IdentityPolicyName is the name of the identity policy and of its binding.
const IdentityPolicyName = "toolgate-identity"

// StampPolicy is stamp-policy.yaml: the toolgate-requester and toolgate-approver
// MutatingAdmissionPolicies (the API server sets spec.requester, spec.requesterGroups and
// spec.approver from request.userInfo on create) and their bindings.
//
//go:embed stamp-policy.yaml
var StampPolicy []byte

// RequesterPolicyName and ApproverPolicyName name the stamp policies and their bindings.
const (
	RequesterPolicyName = "toolgate-requester"
	ApproverPolicyName  = "toolgate-approver"
)

// CancelPolicy is cancel-policy.yaml: the toolgate-cancel ValidatingAdmissionPolicy (only a
// call's requester, or a user granted the verb "cancel" on toolcalls, may set spec.cancel)
// and its binding.
//
//go:embed cancel-policy.yaml
var CancelPolicy []byte

// CancelPolicyName is the name of the cancel policy and of its binding.
const CancelPolicyName = "toolgate-cancel"

// RecordPolicy is record-policy.yaml: the toolgate-record ValidatingAdmissionPolicy (only
// the operator, i.e. whoever RBAC grants update on toolcalls/finalizers or
// toolcallapprovals/finalizers, may change a call's or an approval's ownerReferences,
// finalizers and toolgate.dev/ labels and annotations) and its binding.
//
//go:embed record-policy.yaml
var RecordPolicy []byte

// RecordPolicyName is the name of the record policy and of its binding.
const RecordPolicyName = "toolgate-record"

// CredentialPolicy is credential-policy.yaml: the toolgate-credentials
// ValidatingAdmissionPolicy (a Tool or ClusterTool may reference a Secret in body.env
// valueFrom or body.secretFiles only when the user creating or updating it may get that
// Secret: in the Tool's namespace, or in every namespace for a ClusterTool) and its binding.
//
//go:embed credential-policy.yaml
var CredentialPolicy []byte

// CredentialPolicyName is the name of the credential policy and of its binding.
const CredentialPolicyName = "toolgate-credentials"
