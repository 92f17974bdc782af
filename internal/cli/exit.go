package cli

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/toolgate/toolgate/pipeline"
)

// Exit codes of the toolgate command (README.md, "CLI").
const (
	// ExitOK: the command did what was asked; for `call --wait`, the call Succeeded.
	ExitOK = 0
	// ExitToolError: the call ended with an isError result (phase Failed: the body failed,
	// or the call could not run, e.g. arguments that violate the tool's schema).
	ExitToolError = 1
	// ExitDenied: the call was denied before it ran (phase Denied: a policy or guard, an
	// approver's refusal, the approval window passing, a requester outside the scope).
	ExitDenied = 2
	// ExitUsage: bad flags or arguments, invalid JSON, an unknown tool or scope.
	ExitUsage = 3
	// ExitForbidden: the API server refused the request (RBAC, the identity admission
	// policy) or toolgate's rules forbid it (approving one's own call).
	ExitForbidden = 4
	// ExitTimeout: --timeout passed before the call finished; the call goes on.
	ExitTimeout = 5
	// ExitFailure: anything else — a call not found, a call not awaiting approval, a
	// refused prompt, an unreachable API server.
	ExitFailure = 6
	// ExitInterrupted: interrupted (Ctrl-C) while waiting; the call goes on.
	ExitInterrupted = 130
)

// ExitError is an error with the exit code the command ends with. With a nil Err it is
// silent: the command has already said what happened (a call's isError result).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// exitSilently ends the command with code and no message; ExitOK is no error.
func exitSilently(code int) error {
	if code == ExitOK {
		return nil
	}
	return &ExitError{Code: code}
}

// Exit wraps err with an exit code; a nil err stays nil.
func Exit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// Exitf is Exit with a formatted message.
func Exitf(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Usagef is an ExitUsage error.
func Usagef(format string, args ...any) error { return Exitf(ExitUsage, format, args...) }

// ExitCodeOf maps an error to its exit code: an ExitError's own code, else a code by the
// kind of error (Forbidden, a scope that does not resolve, a context that ended).
func ExitCodeOf(err error) int {
	var exit *ExitError
	var resolve *pipeline.ResolveError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit):
		return exit.Code
	case apierrors.IsForbidden(err):
		return ExitForbidden
	case errors.As(err, &resolve):
		return ExitUsage
	case errors.Is(err, context.DeadlineExceeded):
		return ExitTimeout
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitFailure
}
