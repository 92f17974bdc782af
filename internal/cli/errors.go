package cli

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiOp names a request for error messages: "create toolcalls.toolgate.dev in namespace ns".
type apiOp struct {
	verb, resource, namespace string
}

// explain turns an API error into one a person can act on, with its exit code: a
// Forbidden says who may not do what where (from the StatusDetails, else op), a NotFound
// names the object. Other errors keep their text.
func explain(err error, op apiOp) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	st := status.Status()
	switch {
	case apierrors.IsForbidden(err):
		return Exit(ExitForbidden, errors.New(forbiddenMessage(st, op)))
	case apierrors.IsNotFound(err):
		return Exit(ExitFailure, errors.New(notFoundMessage(st, op)))
	}
	return err
}

// forbiddenMessage reads "you may not <verb> <resource> in namespace <ns>", plus the
// admission policy's message when a policy (not RBAC) refused.
func forbiddenMessage(st metav1.Status, op apiOp) string {
	resource := qualified(st.Details, op.resource)
	msg := fmt.Sprintf("you may not %s %s", op.verb, resource)
	if st.Details != nil && st.Details.Name != "" {
		msg += " " + st.Details.Name
	}
	if op.namespace != "" {
		msg += fmt.Sprintf(" in namespace %q", op.namespace)
	}
	if _, why, ok := strings.Cut(st.Message, "denied request: "); ok {
		return msg + ": " + why
	}
	if user := forbiddenUser(st.Message); user != "" {
		msg += " (as " + user + ")"
	}
	return msg
}

// forbiddenUser finds the user in RBAC's `User "bob" cannot …` message.
func forbiddenUser(message string) string {
	_, rest, ok := strings.Cut(message, `User "`)
	if !ok {
		return ""
	}
	user, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return user
}

func notFoundMessage(st metav1.Status, op apiOp) string {
	resource := qualified(st.Details, op.resource)
	name := ""
	if st.Details != nil {
		name = st.Details.Name
	}
	msg := strings.TrimSpace(fmt.Sprintf("%s %s not found", resource, name))
	if op.namespace != "" {
		msg += fmt.Sprintf(" in namespace %q", op.namespace)
	}
	return msg
}

// qualified is "resource.group" from the StatusDetails, else the fallback.
func qualified(d *metav1.StatusDetails, fallback string) string {
	if d == nil || d.Kind == "" {
		return fallback
	}
	if d.Group == "" {
		return d.Kind
	}
	return d.Kind + "." + d.Group
}
