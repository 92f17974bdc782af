package main

import "github.com/toolgate/toolgate/pkg/podcontract"

// envTraceparent is the body's W3C trace context: the operator's execution span of the
// attempt (docs/operations.md, "Tracing"). The operator sets it in the tool container's
// environment when it traces; the runner hands it to the body unchanged (bodyEnviron keeps
// it), so that the tool can continue the trace. A runner that gets the attempt from a
// handover instead of its environment (a warm Pod) must set it from the handover's
// traceparent in the body's environment the same way.
const envTraceparent = podcontract.EnvTraceparent
