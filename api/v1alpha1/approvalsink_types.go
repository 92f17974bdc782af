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

// ApprovalEvent names a moment of an approval the operator notifies sinks of.
// +kubebuilder:validation:Enum=Requested;Approved;Denied;Expired
type ApprovalEvent string

// The approval events; their CloudEvent types are dev.toolgate.toolcall.approval.<lower-case>.
const (
	// ApprovalEventRequested: a call parked in AwaitingApproval.
	ApprovalEventRequested ApprovalEvent = "Requested"
	// ApprovalEventApproved: an approval let the parked call go on.
	ApprovalEventApproved ApprovalEvent = "Approved"
	// ApprovalEventDenied: an approval (or a digest mismatch) ended the parked call Denied.
	ApprovalEventDenied ApprovalEvent = "Denied"
	// ApprovalEventExpired: nobody answered within the approval window (ApprovalTimeout).
	ApprovalEventExpired ApprovalEvent = "Expired"
)

// ApprovalSink is an HTTP endpoint that receives a signed CloudEvent (structured JSON) when
// a call asks for approval and when the approval is answered or expires.
type ApprovalSink struct {
	// name identifies the sink in events and logs; a DNS label, unique in the list.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// url is where the events are POSTed: an https:// URL, or an http:// URL whose host is a
	// cluster Service name (ending in .svc or .svc.cluster.local). At most 2048 characters.
	// Redirects are not followed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'https' || (url(self).getScheme() == 'http' && (url(self).getHostname().endsWith('.svc') || url(self).getHostname().endsWith('.svc.cluster.local'))))",message="url must be https://, or http:// to a cluster Service (a host ending in .svc or .svc.cluster.local)"
	URL string `json:"url"`

	// secretRef names the key of a Secret in the call's namespace that holds the HMAC-SHA256
	// key the operator signs each event with (the receiver holds the same key). The Secret
	// must be of type toolgate.dev/approval-sink-key (SecretTypeApprovalSinkKey): the
	// operator signs with no other Secret, so that a scope's writer cannot have it sign with
	// a Secret they cannot read. The operator GETs only this Secret, when it delivers an
	// event, and caches nothing.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`

	// events lists the events the sink receives. Empty: all of them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	Events []ApprovalEvent `json:"events,omitempty"`
}

// SecretKeySelector names one key of a Secret in the referring object's namespace.
type SecretKeySelector struct {
	// name of the Secret (a DNS subdomain).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key in the Secret's data. Default: hmac-key.
	// +optional
	// +kubebuilder:default=hmac-key
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// DefaultSecretKey is the Secret key an ApprovalSink's secretRef reads when it names none.
const DefaultSecretKey = "hmac-key"

// SecretTypeApprovalSinkKey is the type a Secret must have for a sink's secretRef to use it:
// its opt-in to being an HMAC key (a Secret's type cannot change after it is created, so no
// existing Secret can be made one by an edit).
const SecretTypeApprovalSinkKey = "toolgate.dev/approval-sink-key"

// Wants reports whether the sink receives event e.
func (s *ApprovalSink) Wants(e ApprovalEvent) bool {
	if len(s.Events) == 0 {
		return true
	}
	for _, x := range s.Events {
		if x == e {
			return true
		}
	}
	return false
}
