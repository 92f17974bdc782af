// Package tools holds the example tool bodies of toolgate's demo and end-to-end tests.
//
// Each sub-folder is one static Go command (package main) that the image
// toolgate.local/tools:dev carries at /tools/<name> (see hack/tools-image.sh). A body reads
// its arguments — one JSON object — from $TOOLGATE_ARGS_FILE (which the runner writes) or,
// when that is unset, from stdin, and writes its result to stdout: a JSON value, or plain
// text. A failure the model should see is printed as {"isError":true,"error":"..."} with
// exit code 0; a broken invocation (arguments that are not an object) exits non-zero.
//
//	echo       returns its arguments object unchanged
//	sh         {"command": "..."}: busybox sh -c, returns exit code, stdout and stderr
//	read_file  {"path": "..."}: a file (or a folder listing) under /samples, read-only
//	sleep      {"seconds": N}: sleeps, for timeouts and concurrency
//	large      {"kib": N}: N KiB of text, for results carried in the Pod log
//	whoami     {}: uid, gid, capabilities, root filesystem and token checks of the sandbox
//	oom        {"mib": N}: allocates N MiB, to be killed by its memory limit
//	tracespan  {"name", "millis"}: one span of its own under $TRACEPARENT (the operator's execution span)
//	fetch      {"url", "direct", "ca"}: one GET through the egress proxy (HTTPS_PROXY), or direct
package tools
