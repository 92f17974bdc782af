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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/config/admission"
)

// probeUser is a requester and approver no client authenticates as.
const probeUser = "toolgatetest:nobody"

// probeUID is the callUID of the probe approval (it answers no call).
const probeUID = "00000000-0000-4000-8000-000000000000"

// waitForIdentityPolicy polls, with server-side dry-run creates as the admin, until the
// identity policy rejects a ToolCall and a ToolCallApproval that name another user. A new
// ValidatingAdmissionPolicy and binding take effect only after the apiserver's policy
// informers have seen both, usually within a second.
func (e *Env) waitForIdentityPolicy(ctx context.Context) error {
	probes := []client.Object{
		MakeToolCall("toolgatetest-probe", metav1.NamespaceDefault).Requester(probeUser).Obj(),
		MakeToolCallApproval("toolgatetest-probe", metav1.NamespaceDefault).Approver(probeUser).CallUID(probeUID).Obj(),
	}
	var last error
	for _, probe := range probes {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			last = e.Client.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
			return IsIdentityPolicyDenial(last), nil
		})
		if err != nil {
			if last == nil {
				last = errors.New("the dry-run create was admitted")
			}
			return fmt.Errorf("admission policy %s not in effect for %T: %w", admission.IdentityPolicyName, probe, last)
		}
	}
	return nil
}

// IsIdentityPolicyDenial reports whether err is the toolgate-identity policy's refusal.
func IsIdentityPolicyDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "'"+admission.IdentityPolicyName+"'")
}
