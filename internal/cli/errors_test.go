package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/toolgate/toolgate/pipeline"
)

var toolcalls = schema.GroupResource{Group: "toolgate.dev", Resource: "toolcalls"}

func TestExplain(t *testing.T) {
	rbac := apierrors.NewForbidden(toolcalls, "", errors.New(`User "bob" cannot create resource "toolcalls" in API group "toolgate.dev" in the namespace "agents"`))
	admission := apierrors.NewForbidden(toolcalls, "", errors.New(`ValidatingAdmissionPolicy 'toolgate-identity' with binding 'toolgate-identity' denied request: spec.requester must be the authenticated user creating the ToolCall (request.userInfo.username)`))
	noDetails := &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonForbidden, Code: 403, Message: "forbidden"}}
	cases := []struct {
		name     string
		err      error
		op       apiOp
		want     string
		wantCode int
	}{
		{name: "RBAC", err: rbac, op: apiOp{"create", "toolcalls", "agents"},
			want: `you may not create toolcalls.toolgate.dev in namespace "agents" (as bob)`, wantCode: ExitForbidden},
		{name: "admission policy", err: admission, op: apiOp{"create", "toolcalls", "agents"},
			want: `you may not create toolcalls.toolgate.dev in namespace "agents": spec.requester must be the authenticated user creating the ToolCall (request.userInfo.username)`, wantCode: ExitForbidden},
		{name: "named object", err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p-1", errors.New("no")), op: apiOp{"get", "pods/log", "ns"},
			want: `you may not get pods p-1 in namespace "ns"`, wantCode: ExitForbidden},
		{name: "no details: the operation names the resource", err: noDetails, op: apiOp{"list", "tools.toolgate.dev", "ns"},
			want: `you may not list tools.toolgate.dev in namespace "ns"`, wantCode: ExitForbidden},
		{name: "cluster-scoped", err: noDetails, op: apiOp{verb: "create", resource: "selfsubjectreviews.authentication.k8s.io"},
			want: `you may not create selfsubjectreviews.authentication.k8s.io`, wantCode: ExitForbidden},
		{name: "not found", err: apierrors.NewNotFound(toolcalls, "nope"), op: apiOp{"get", "toolcalls", "agents"},
			want: `toolcalls.toolgate.dev nope not found in namespace "agents"`, wantCode: ExitFailure},
		{name: "wrapped", err: fmt.Errorf("listing: %w", apierrors.NewNotFound(toolcalls, "x")), op: apiOp{"get", "toolcalls", "ns"},
			want: `toolcalls.toolgate.dev x not found in namespace "ns"`, wantCode: ExitFailure},
		{name: "other API errors keep their text", err: apierrors.NewConflict(toolcalls, "x", errors.New("changed")), op: apiOp{"get", "toolcalls", "ns"},
			want: `Operation cannot be fulfilled on toolcalls.toolgate.dev "x": changed`, wantCode: ExitFailure},
		{name: "not an API error", err: errors.New("dial tcp: connection refused"), want: "dial tcp: connection refused", wantCode: ExitFailure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := explain(tc.err, tc.op)
			if diff := cmp.Diff(tc.want, got.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if code := ExitCodeOf(got); code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
		})
	}
}

func TestExitCodeOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{Usagef("bad"), ExitUsage},
		{fmt.Errorf("wrapped: %w", Exit(ExitDenied, errors.New("x"))), ExitDenied},
		{exitSilently(ExitToolError), ExitToolError},
		{apierrors.NewForbidden(toolcalls, "x", errors.New("no")), ExitForbidden},
		{&pipeline.ResolveError{Reason: pipeline.ReasonUnknownScope, Msg: "no scope"}, ExitUsage},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), ExitTimeout},
		{context.Canceled, ExitInterrupted},
		{errors.New("anything"), ExitFailure},
	}
	for _, tc := range cases {
		if got := ExitCodeOf(tc.err); got != tc.want {
			t.Errorf("ExitCodeOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if exitSilently(ExitOK) != nil {
		t.Error("exitSilently(ExitOK) is an error")
	}
}
