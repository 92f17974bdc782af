// Package tools holds the example tool bodies of toolgate's demo and end-to-end tests.
//
// Each sub-folder is one static Go command (package main) that the image
// toolgate.local/tools:dev carries at /tools/<name> (see hack/tools-image.sh). A body reads
// its arguments — one JSON object — from $TOOLGATE_ARGS_FILE (which the runner writes) or,
// when that is unset, from stdin, and writes its result to stdout: a JSON value, or plain
// text. The workspace tools resolve every path inside their root through os.Root
// (internal/wsfs): "..", absolute paths elsewhere and symbolic links pointing out are
// refused. A failure the model should see is printed as {"isError":true,"error":"..."} with
// exit code 0; a broken invocation (arguments that are not an object) exits non-zero.
//
//	echo       returns its arguments object unchanged
//	sh         {"command": "..."}: busybox sh -c (in /workspace when mounted), returns exit code, stdout and stderr
//	read_file  {"path", "maxBytes"}: a file (or a folder listing) in /workspace ($TOOLS_ROOT: /samples in the namespace layer's example)
//	write_file {"path", "content"}: writes a file in /workspace, creating its folders
//	edit_file  {"path", "old_string", "new_string"}: replaces one exact, unique string in a file of /workspace
//	list       {"path", "pattern", "recursive"}: lists /workspace, or globs it ("**/*.go")
//	grep       {"pattern", "path", "glob", "ignoreCase"}: regular-expression search of /workspace's text files
//	sleep      {"seconds": N}: sleeps, for timeouts and concurrency
//	large      {"kib": N}: N KiB of text, for results carried in the Pod log
//	whoami     {}: uid, gid, capabilities, root filesystem and token checks of the sandbox
//	oom        {"mib": N}: allocates N MiB, to be killed by its memory limit
//	tracespan  {"name", "millis"}: one span of its own under $TRACEPARENT (the operator's execution span)
//	fetch      {"url", "direct", "ca"}: one GET through the egress proxy (HTTPS_PROXY), or direct
package tools
