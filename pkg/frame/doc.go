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
// captured bytes are not valid UTF-8 or JSON escaping would make them longer
// than base64, as "stdoutB64" (standard base64). At most one of the two is
// present; neither is present when stdout was empty. Use
// [Frame.SetStdout], [Frame.StdoutData] and [Frame.StdoutIsUTF8] rather than the
// fields. "stdoutBytes" is the total number of bytes the tool wrote, which can
// exceed the kept bytes, in which case "truncated" is true.
//
// The runner redacts the credentials the tool is given from its stdout and stderr
// (cmd/runner, "Credentials"): each occurrence becomes "[REDACTED]", and "redactions"
// counts them. Every stdout and stderr field then describes the redacted output:
// "stdout" is a prefix of it, "stdoutBytes" and "stderrBytes" count its bytes, and a
// frame never holds what was redacted.
//
// "reason" is set only when the runner itself failed or refused to run the tool
// (see the Reason constants); a tool that ran and failed has an empty reason, its
// exit code in "exitCode" and, when a signal killed it, the signal name in
// "signal" (e.g. "SIGKILL", as after an OOM kill).
//
// # Trust
//
// Nothing written inside the sandbox is believed unless the runner vouched for it. Each
// attempt has its own key, derived from the namespace's master ([AttemptKey]; see
// derive.go); only the attempt's key reaches the Pod, and only its signer container,
// which the body cannot reach; the signer signs the termination message with
// HMAC-SHA256, under the attempt's key, over its exact bytes:
//
//	tgs1:<43 characters: base64url(HMAC-SHA256(key, BODY))>:BODY
//
// where BODY is one of the three forms below. A [Decoder] holding the key
// checks the MAC, in constant time, before it decodes or decompresses anything
// ([ErrUnsigned], [ErrSignature]). A log block needs no MAC of its own: the
// signed pointer carries its SHA-256, checked before it is inflated.
//
// Every size a Decoder accepts derives from the call's own stdout limit
// ([MaxFrameBytes]: stdout as base64 at worst, the stderr tail and error at
// their worst JSON escaping, and the fixed fields): a termination message over
// [MaxTerminationMessage], a frame that inflates beyond the bound, a pointer
// announcing more, and a log tail longer than [Decoder.LogReadBounds] are
// [ErrTooLarge], whatever the message claims.
//
// # Delivery
//
// [Encoder.Encode] returns the bytes for the termination message (always) and a log
// block (only when needed), following these rules in order (the sizes leave
// room for the signature):
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
// outputLeftOpen, redactions) so that the operator can still report the outcome if the log
// is gone. Every data line is tagged with the nonce so that lines of the tool's
// stderr that the container runtime interleaves with the block are skipped.
// The runner writes the block in one write, after it has finished copying the
// tool's stderr, so it is the end of the log.
//
// [Decoder.DecodeTermination] verifies the signature, tells the three forms
// apart by their first bytes and reports needLog for a pointer. The operator
// then reads the end of the log (pods/log with tailLines and limitBytes from
// [Decoder.LogReadBounds], without timestamps) and calls [Decoder.DecodeLog],
// which takes the last matching block, verifies its SHA-256, inflates exactly
// the announced frame size and checks that it agrees with the pointer.
//
// Decoding returns errors, never panics, on corrupted input.
package frame
