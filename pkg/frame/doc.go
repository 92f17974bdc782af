// Package frame defines the result frame that cmd/runner writes when a tool's
// command finishes inside the tool Pod, and that the operator decodes from the
// Pod's terminated container status (and, for large results, from the
// container log).
//
// # The frame
//
// A [Frame] is one JSON object with a version field ("v", currently [Version]).
// Unknown fields are ignored by the decoder so that a newer runner can add
// optional fields without breaking an older operator; an incompatible change
// bumps the version, which the decoder rejects with [ErrVersion].
//
// The tool's stdout is carried either as "stdout" (a UTF-8 string) or, when the
// captured bytes are not valid UTF-8, as "stdoutB64" (standard base64). At most
// one of the two is present; neither is present when stdout was empty. Use
// [Frame.SetStdout], [Frame.StdoutData] and [Frame.StdoutIsUTF8] rather than the
// fields. "stdoutBytes" is the total number of bytes the tool wrote, which can
// exceed the kept bytes, in which case "truncated" is true.
//
// "reason" is set only when the runner itself failed or refused to run the tool
// (see the Reason constants); a tool that ran and failed has an empty reason, its
// exit code in "exitCode" and, when a signal killed it, the signal name in
// "signal" (e.g. "SIGKILL", as after an OOM kill).
//
// # Delivery
//
// [Encode] returns the bytes for the termination message (always) and a log
// block (only when needed), following these rules in order:
//
//  1. The JSON frame itself, when it is at most [MaxTerminationMessage] bytes.
//     It starts with '{'.
//  2. Otherwise [CompressedPrefix] ("tgz1:") followed by base64(gzip(JSON)),
//     when that fits in [MaxTerminationMessage] bytes.
//  3. Otherwise the termination message is a small pointer frame with
//     "inLog":true, and the full frame is written to the container log as a
//     block (see below).
//
// The log block is
//
//	--toolgate-result-begin NONCE--
//	NONCE BASE64-CHUNK
//	...
//	--toolgate-result-end NONCE--
//
// where the chunks are base64(gzip(JSON)) in lines of at most 96 characters and
// NONCE is the first 12 hex digits of the SHA-256 of the gzip bytes. The pointer
// carries the full digest ("sha256"), the block size from its begin line
// ("logBytes", "logLines"), the JSON size ("frameBytes"), the marker when it is
// not [DefaultMarker], and a summary of the outcome (exitCode, signal, reason,
// error, argsDigest, durationMs, stdoutBytes, truncated, stderrBytes,
// outputLeftOpen) so that the operator can still report the outcome if the log
// is gone. Every data line is tagged with the nonce so that lines of the tool's
// stderr that the container runtime interleaves with the block are skipped.
// The runner writes the block in one write, after it has finished copying the
// tool's stderr, so it is the end of the log.
//
// [DecodeTermination] tells the three forms apart by their first bytes and
// reports needLog for a pointer. The operator then reads the end of the log
// (pods/log with tailLines and limitBytes from [Frame.LogReadBounds], without
// timestamps) and calls [DecodeLog], which takes the last matching block,
// verifies its SHA-256 and that it agrees with the pointer.
//
// Decoding bounds what it decompresses ([MaxDecodedFrame]) and returns errors,
// never panics, on corrupted input.
package frame
