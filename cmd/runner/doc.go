// Command runner wraps a tool's command inside the tool Pod (as Tekton's
// entrypoint does): it hands the tool its canonical arguments, bounds what it
// reads of the tool's output, and writes the result frame (package
// github.com/toolgate/toolgate/pkg/frame) where the operator reads it. The
// operator's Job builder relies on exactly the contract below.
//
// # Invocation
//
//	runner --sign [flags]                            the signer
//	runner --body [flags] -- TOOL_COMMAND [ARGS...]  the body side
//	runner [flags] -- TOOL_COMMAND [ARGS...]         alone (tests, a run by hand)
//	runner copy DEST            (or: runner --copy-self DEST)
//
// A tool Pod runs the runner twice, in two containers, so that nothing a body can reach
// holds a secret under any runtime (gVisor lets a process read and signal its container's
// PID 1; another container is another PID and mount namespace under every runtime):
//
//   - The signer (container toolgate-signer, from the operator's image, first in the Pod)
//     holds the arguments, the attempt's frame key and, to redact them, copies of the
//     credentials, and runs nothing. It makes the checks of step 1, sends the arguments to
//     the body side, redacts, bounds and counts what the body side streams back (steps 5
//     and 6), signs the frame and delivers it from its own container (step 9).
//   - The body side (PID 1 of container tool, in the tool's image) holds no key and none of
//     the signer's variables: it takes the arguments from the signer, runs the tool (steps
//     2, 4, 7 and 8), streams its stdout and stderr to the signer unkept and reports how it
//     ended, then kills what the tool left, empties its own container's termination message
//     and exits with the tool's code (steps 9 and 10).
//
// They talk over a Unix socket: the abstract TOOLGATE_SIGNER_ABSTRACT (default
// @toolgate-signer, the Pod's network namespace, which the two containers share under runc)
// and, when its directory exists, the file TOOLGATE_SIGNER_SOCKET in an emptyDir of 1 Mi
// that only the two containers mount (the operator adds it for a Pod under a RuntimeClass,
// whose containers may be sandboxes of their own). The body side tries the abstract one
// first. The signer listens on both before anything else and accepts one
// connection; the body side tries for 30 s (the kubelet starts the signer first), then
// exits 125. Each message is a type byte, a 4-byte length and that many bytes (link.go):
// the arguments one way; output chunks and one end message (exit code, signal) the other.
// The signer bounds each message and believes of the body side only what a body may say of
// itself anyway, its output and its exit; the operator believes the frame only when its
// exit code is the one the kubelet saw the body's container end with. Once connected, the
// body side (as PID 1) points its own stdout and stderr at /dev/null: the body's container
// log stays empty, and the tool's stderr, redacted, is in the signer's log.
//
// Alone (neither flag), one process does both: it runs the tool and signs.
//
// The copy form copies the runner's own executable to DEST (mode 0755,
// creating directories) and exits 0; an init container uses it to put the
// runner into a shared emptyDir for arbitrary tool images. The binary is
// static (CGO_ENABLED=0) and needs nothing from the image.
//
// TOOL_COMMAND is looked up in PATH unless it contains a slash. It inherits the
// environment and working directory of the runner that starts it (the body side, or alone).
//
// # Environment (flags override)
//
// The signer's (or a runner's alone); the body side reads only TOOLGATE_SIGNER_SOCKET,
// TOOLGATE_TERMINATION_PATH and --io-grace, and takes the rest from the signer.
//
//	TOOLGATE_ARGS              --args              canonical JSON argument bytes, exactly as frozen
//	TOOLGATE_ARGS_DIGEST       --args-digest       "sha256:<64 lowercase hex>" of those bytes; required
//	TOOLGATE_ARGS_FILE         --args-file         where the arguments are written for the tool (default
//	                                               /toolgate/args.json; "-": no file)
//	TOOLGATE_MAX_OUTPUT        --max-output        stdout bytes kept (default 1048576, at most 4194304)
//	TOOLGATE_STDERR_TAIL       --stderr-tail       stderr tail bytes kept (default 4096, at most 65536)
//	TOOLGATE_DEADLINE_MS                           the tool's timeout in ms (0 or unset: none; at most a day):
//	                                               counted from the tool's start, the body side sends its
//	                                               process group SIGTERM then, SIGKILL 2 s later; the frame
//	                                               says DeadlineExceeded, also when the signer's own clock
//	                                               heard the end after timeout + 2 s or none by timeout + 5 s
//	                                               (the Pod's activeDeadlineSeconds adds the start allowance)
//	TOOLGATE_TERMINATION_PATH  --termination-path  termination message file (default /dev/termination-log)
//	TOOLGATE_RESULT_MARKER     --result-marker     log block marker (default "toolgate-result", [A-Za-z0-9._-]{1,64})
//	TOOLGATE_SIGNER_SOCKET                         the link's socket file (default /var/run/toolgate-link/signer.sock)
//	TOOLGATE_SIGNER_ABSTRACT                       the link's abstract socket (default @toolgate-signer)
//	TOOLGATE_ATTEMPT_KEY                           the attempt's frame key (frame.AttemptKey, base64url), in a cold
//	                                               Pod's signer only, from the attempt's key Secret (<job>-key) by
//	                                               secretKeyRef; without it the frame is unsigned, and the
//	                                               operator does not trust it
//	TOOLGATE_WARM                                  "1": warm mode (below)
//	TOOLGATE_HANDOVER_KEYS                         warm: the Ed25519 public keys a Handover must be signed with
//	                                               (frame.HandoverPublicKey, base64url, comma-separated), from the
//	                                               toolgate-frame-key Secret's handover-keys by secretKeyRef
//	TOOLGATE_POD_UID                               warm, session: the Pod's own uid (downward API)
//	TOOLGATE_SESSION                               "1": session mode (below), on both containers
//	TOOLGATE_SESSION_TLS_DIR                       session signer: tls.crt, tls.key, client-ca.crt (default
//	                                               /var/run/toolgate-session-tls)
//	TOOLGATE_SESSION_ADDR                          session signer: listen address (default :8443)
//	TOOLGATE_SESSION_WIPE                          session body side: directories emptied after each call
//	                                               (comma-separated; default /tmp,/dev/shm,$HOME)
//	TOOLGATE_WORKSPACE                             session body side: the workspace, never emptied (default
//	                                               /workspace)
//	                           --io-grace          how long to keep reading output after the tool exits (default 2s)
//	TRACEPARENT                                    the attempt's execution span (W3C traceparent), set by an
//	                                               operator that traces (warm: in the Handover); the tool gets
//	                                               it unchanged
//	TOOLGATE_SECRET_ENV                            comma-separated names of the tool's variables whose values
//	                                               are credentials (see Credentials)
//	TOOLGATE_SECRET_FILES                          comma-separated names of the secret files, mounted at
//	                                               /run/secrets/toolgate/<name>
//	TOOLGATE_SECRET_FILE_<i>                       the value of file i of TOOLGATE_SECRET_FILES (from 0)
//
// Because the arguments travel in an environment variable (or argv), they are
// bounded by the kernel's limit on one such string, 128 KiB on Linux.
//
// # Warm mode (a Tool's warm pool)
//
// With TOOLGATE_WARM=1 the signer was started before its call existed: TOOLGATE_ARGS and
// TOOLGATE_ARGS_DIGEST are ignored, and it holds no secret, only TOOLGATE_HANDOVER_KEYS. It
// waits for one Handover line on stdin (frame.Handover: the call's uid and attempt, the
// arguments, their expected digest from the operator, an optional traceparent the tool
// gets as TRACEPARENT, the attempt's frame key, and auth), written by the operator through
// pods/attach to the signer's container (which has stdin and stdinOnce). The auth must be
// an Ed25519 signature of the Handover for this Pod's uid by one of TOOLGATE_HANDOVER_KEYS
// (frame.VerifyHandover): otherwise reason HandoverRefused, exit 125, the body side is told
// to run nothing and the frame is unsigned — nothing in the Pod can sign a Handover, so
// whoever can attach gets nothing run. A Handover taken brings the key its frame is signed
// with; then the signer does exactly what follows, digest check first. Stdin closed or
// malformed before a whole line: reason InvalidConfiguration, exit 125, the body is not
// run. SIGTERM while waiting: exit 0 without a frame (an idle pool Pod deleted). After the
// termination message it writes the same signed bytes to stdout as one frame.ResultLine,
// which the operator's attach stream reads. The body side is never warm: it connects at
// once and waits for the arguments.
//
// # Session mode (a session's sandbox Pod)
//
// With TOOLGATE_SESSION=1 on both containers, one Pod runs one session's calls (one scope,
// session, requester and tool) one after another, each with every promise of a cold call.
//
// The signer holds no secret at start but TOOLGATE_HANDOVER_KEYS (and TOOLGATE_POD_UID); it
// ignores TOOLGATE_ARGS, TOOLGATE_ARGS_DIGEST and TOOLGATE_ATTEMPT_KEY. It listens on
// TOOLGATE_SESSION_ADDR (TCP, default :8443) with TLS 1.3 only: its certificate and key are
// tls.crt and tls.key in TOOLGATE_SESSION_TLS_DIR, and a client certificate is required,
// verified against client-ca.crt there. That directory is a Secret volume mounted into the
// signer's container only: the body, which shares the Pod's network namespace and can
// connect, holds no client certificate (its handshake fails, logged "session: refused a
// connection"; a handshake has 10 s) and cannot serve as the listener. It logs "session:
// listening for the operator at ADDR", then accepts the body side's link (as the one-shot
// signer), then serves. Its TLS files unusable: exit 125, reason InvalidConfiguration.
//
// With TOOLGATE_SESSION_RELAY (a socket path, set on both containers of a Pod under a
// RuntimeClass) the signer listens there, not on TCP, and the body side listens on
// TOOLGATE_SESSION_ADDR and copies each connection's bytes to and from that socket: under a
// runtime whose sandbox holds the Pod's address (gVisor) only a listener inside the body's
// sandbox is reachable. The relay sees only the TLS stream, which ends at the signer.
//
// Connections: one at a time. A newer authenticated connection replaces the current one
// (closed) when the session is idle, and waits for the end of a call in progress (whose
// reply goes to the call's own connection): only the operator can make one, and it redials
// when its connection broke, which this side may not have noticed yet; refusing it would
// lock the operator out. A connection closed or broken while idle is no error: the signer
// waits for the next.
//
// Wire, operator → signer: one frame.Handover per call as written by frame.EncodeHandover
// (one JSON line, at most frame.MaxHandoverBytes): callUID, attempt, attemptKey, arguments,
// argumentsDigest, traceparent (optional), and the session fields deadlineMs (required,
// 1..frame.MaxSessionDeadlineMs), env ("NAME=value", at most frame.MaxSessionEnv, e.g. the
// attempt's egress proxy variables with its grant) and secretEnv (which of env are
// credentials, at most frame.MaxSessionSecretEnv), bounded by frame.CheckSession; auth from
// frame.SignHandover for this Pod's uid, which covers the session fields. One Handover at a
// time: the next after the reply to the previous (one written early waits its turn).
//
// Wire, signer → operator: exactly one reply per Handover line: when the frame is too large
// for a termination message even compressed, its log block, then always
// frame.ResultLine(termination message), i.e. "\n--toolgate-warm-result <base64>\n". Read up
// to that line, take frame.LastResultLine, DecodeTermination with the attempt's key and,
// when it points into the log, DecodeLog over the reply's bytes. A reply signed with the
// attempt's key is the call's frame. An unsigned reply vouches for nothing: the Handover
// was refused before its key was taken.
//
// Per call the signer: verifies the auth (frame.VerifyHandover for TOOLGATE_POD_UID;
// otherwise unsigned reply HandoverRefused); refuses a call attempt already run in this
// session (unsigned, HandoverRefused) and a Handover CheckSession refuses (signed,
// InvalidConfiguration); then steps 1 to 10 below as a one-shot signer with the Handover's
// arguments, digest, traceparent and key: preflight (credentials: the Pod's and the
// call's secretEnv values; the digest), the body side runs the call, the output is redacted
// (a fresh redactor, so "redactions" and every count and bound are the call's own), the
// frame signed with the attempt's key and written back; then the key is zeroed. The
// termination message is not written per call (it is per container lifetime): only when
// the session ends.
//
// Link, per call: the signer sends one start message (arguments, args file, traceparent,
// env, deadlineMs); the body side streams stdout and stderr chunks and, once the container
// is reset, one end message (exit code, signal, reason, durationMs, outputLeftOpen,
// deadlineExceeded, cleanupError). Between calls neither side sends anything: a message
// from the body side, or the link's end, while idle ends the session (BodyLost); a message
// from the signer, or the link's end, during a call makes the body side SIGKILL the tool's
// group and exit 125.
//
// The body side, per call: the environment is the container's own (the runner never
// changes its own), the runner-only variables removed, plus the call's env, TRACEPARENT,
// TOOLGATE_ARGS_FILE and the egress trust variables: nothing of an earlier call. The tool
// runs in a process group of its own; SIGTERM and SIGINT go to the group; at deadlineMs the
// group gets SIGTERM and 2 s later SIGKILL (frame: reason DeadlineExceeded, the signal that
// ended the tool). When the tool has exited the body side SIGKILLs its group, then resets
// the container: as PID 1 killOthers (the very function a one-shot body side runs before it
// exits: SIGKILL to every other process of the PID namespace, reaped, up to 2 s; it also
// gets a daemon that left the group with setsid); then it removes the contents (not the
// directories, whose modes stay; symbolic links not followed; a tree the tool made
// unwritable is made writable first) of each TOOLGATE_SESSION_WIPE directory, of the
// args file's directory and of the link volume (but the signer's socket), skipping "/", relative paths, the workspace, any directory in it
// and any holding it (a $HOME under /workspace stays); and empties its termination
// message. Writable mounts other than those (an emptyDir the Tool adds) are not emptied:
// the operator lists them in TOOLGATE_SESSION_WIPE. A reset that fails (cleanupError) ends
// the session. Not PID 1 (tests) there is no killOthers: the group kill alone.
//
// The session ends, and the signer exits 125 with the reason in its log ("session ended:
// REASON: ...") and in its termination message (an unsigned frame: reason, "session ended:
// ..."), so that the operator replaces the Pod, on: HandoverRefused and InvalidConfiguration
// above (a line that is no Handover too: unsigned reply), ArgumentsDigestMismatch or
// CredentialTooShort (signed reply; nothing ran), DeadlineExceeded (signed reply; also when
// the signer's own clock says the call ran past deadlineMs + 2 s, whatever the body side
// says, or it heard no end by deadlineMs + 5 s: then exit code 125 in the frame), BodyLost
// (the body side gone or out of protocol), SessionResetFailed (after the call's signed
// reply) and ResultUndelivered (the reply could not be written within 30 s). A call whose
// tool could not start (CommandNotFound, StartError, ArgumentsFileError) or that exited
// non-zero does not end it. SIGTERM while idle: exit 0, no termination message; during a
// call: the call ends (the body side forwards it to the group), its reply is written, then
// exit 0. The body side exits 0 when the signer ends the link (SIGTERM while idle waits
// for that), 125 when its own reset failed or the link broke mid-call.
//
// What the body side says about its own reset is the body's to forge under a runtime that
// lets the body trace or signal its PID 1 (gVisor; under runc the body side is
// non-dumpable and PID 1): a Pod is one session's only, so what such a body could carry
// over stays within the session's own calls, of one requester and one tool.
//
// # What the runner does
//
//  1. Refuses a credential too short to redact (see Credentials). Recomputes the
//     SHA-256 of the arguments. If it differs from TOOLGATE_ARGS_DIGEST (or that
//     is unset), the tool is not run and nothing is written to the args file:
//     reason ArgumentsDigestMismatch, exit 125 (the signer tells the body side to run
//     nothing, and the body side exits 125 too).
//     Every frame's "argsDigest" is that expected digest (the call's): the
//     operator believes no frame that names other arguments.
//  2. Writes the arguments to TOOLGATE_ARGS_FILE (creating its directory; the
//     Job mounts an emptyDir there, the root filesystem being read-only). On
//     failure: reason ArgumentsFileError, exit 125.
//  3. Keeps its secrets from the tool. The signer is another container: the body reaches
//     neither its environment, nor its memory, nor its files, under any runtime; and it
//     makes itself non-dumpable (prctl PR_SET_DUMPABLE 0). The body side holds none: its
//     container's environment is the Tool's own. Whichever starts the tool removes from
//     its environment TOOLGATE_ATTEMPT_KEY, TOOLGATE_HANDOVER_KEYS, TOOLGATE_SECRET_ENV,
//     TOOLGATE_SECRET_FILES and every TOOLGATE_SECRET_FILE_<i> (the tool reads the files;
//     the variables TOOLGATE_SECRET_ENV names are its own and stay). A runner alone, which
//     holds the key in the tool's container, relies on being non-dumpable: that keeps the
//     key from a same-user tool under runc, not under gVisor, which does not honour it.
//  4. Starts the tool with TOOLGATE_ARGS_FILE set to that path, and writes the
//     arguments to its stdin, then closes it. A tool that does not read stdin
//     does not block the runner (the write runs aside; EPIPE is ignored; it is
//     abandoned when the tool exits). If the command is not found: reason
//     CommandNotFound, exit 127; if it cannot be started (not executable, bad
//     format): reason StartError, exit 126.
//  5. Reads all of the tool's stdout, so that the tool is never blocked (the body side
//     streams it to the signer), redacts the credentials from it (see Credentials), keeping
//     the first TOOLGATE_MAX_OUTPUT bytes and counting the rest ("truncated",
//     "stdoutBytes"). When the cut falls inside a UTF-8 character of otherwise
//     valid text, that partial character is dropped. The tool's stdout does not
//     reach the container log.
//  6. Copies the tool's stderr, redacted, to its own stderr (the signer's: kubectl logs -c
//     toolgate-signer shows it), keeping the last TOOLGATE_STDERR_TAIL bytes as valid UTF-8.
//  7. Forwards SIGTERM and SIGINT to the tool (the kubelet sends SIGTERM at
//     activeDeadlineSeconds and on deletion); one that arrives before the tool
//     starts is forwarded when it starts, and one that arrives after the tool
//     exited does not interrupt delivery. Every other signal it can catch is
//     caught and dropped: the tool may signal the runner (kill -HUP 1) and the
//     runner outlives it. As PID 1 the kernel drops SIGKILL, SIGSTOP and the
//     signals left at their default action (32, 34) when they come from inside
//     the container (under runc; gVisor may deliver them). The signer, once the body side
//     is connected, drops SIGTERM and waits for the end the body side reports. After the
//     kubelet's SIGKILL (grace period over) there is no frame: the operator sees exit code
//     137 and no termination message.
//  8. When the tool has exited, waits up to --io-grace for its stdout and
//     stderr to reach end of file. A process the tool left running that keeps
//     them open is cut off and reported as "outputLeftOpen".
//  9. When it is PID 1 (and only then), kills every other process of its container and
//     reaps them, so that nothing the tool left behind can write a termination message
//     after the runner; the body side then empties its own container's termination
//     message (the Pod's status shows nothing the body wrote there) and sends the end.
//     Then the signer (or a runner alone) delivers the frame (see package frame), signed
//     with the attempt's key: the termination message, and, for a frame too large for it
//     even compressed, the log block written to its stdout in one write at the very end,
//     after all stderr copying. A signer that never hears how the tool ended — the body
//     side never connected before the signer was stopped, or the link ended, or broke the
//     protocol (a message over its bound, of a type the body side may not send), before
//     an end message — delivers reason BodyLost, exit 125: a frame that vouches for no
//     run (the operator reads the attempt from the kubelet's account alone).
//  10. Exits with the tool's exit code, or 128+N when signal N killed it (the
//     frame's "signal" names it, e.g. "SIGKILL" after an OOM kill), so that
//     the container status stays meaningful: the signer and the body side alike, and
//     the operator believes a frame only when its exit code is the body container's.
//
// # Credentials
//
// A Tool's body may get credentials from Secrets, which the kubelet resolves: variables
// (body.env[].valueFrom), listed by name in TOOLGATE_SECRET_ENV, and files
// (body.secretFiles) at /run/secrets/toolgate/<name>, listed in TOOLGATE_SECRET_FILES,
// whose values the runner reads from TOOLGATE_SECRET_FILE_<i> (the same Secret key as
// file i). In a tool Pod these are the signer's: it gets each variable by the same
// reference as the body's container, and the files' copies; the body's container holds
// only its own variables and files. It reads them at start, before the body runs. A listed
// variable that is not set is reason InvalidConfiguration (exit 125); a variable set to ""
// is a credential of 0 bytes. Without credentials there is nothing to do, at no cost.
//
// A Pod that mounts a session's workspace also gives the signer the values a file of the
// session may hold (credentials an earlier call was given while it mounted the workspace
// ReadWrite): TOOLGATE_REDACT_<i>, for i below 32, each set only if the kubelet found its
// Secret key. They are redacted like the body's own, in every form below, and are never
// the body's: the runner removes them from its environment, and one shorter than 8 bytes
// once trimmed is left out (it refuses nothing: the body was not given it).
//
// A Tool whose egress credentials the egress proxy injects (sandbox.egress.allow[].credential)
// gives the signer each value as TOOLGATE_REDACT_EGRESS_<i>, for i below 8, redacted the
// same way: the body never holds them, but an upstream may echo one back. The body's
// container gets the toolgate egress CA as TOOLGATE_EGRESS_CA: before it starts the tool,
// the body side writes egress-ca-bundle.pem beside the signer's socket (the link volume,
// /var/run/toolgate-link) = the image's roots (the file the Tool's own SSL_CERT_FILE
// names, else the first of Go's Linux list that exists: /etc/ssl/certs/ca-certificates.crt,
// /etc/pki/tls/certs/ca-bundle.crt, /etc/ssl/ca-bundle.pem, /etc/pki/tls/cacert.pem,
// /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem, /etc/ssl/cert.pem; at most 768 KiB)
// and the CA, and gives the tool SSL_CERT_FILE (always) and CURL_CA_BUNDLE,
// REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO and NODE_EXTRA_CA_CERTS (each unless the Tool sets it)
// naming the bundle; never TOOLGATE_EGRESS_CA itself. A CA that is no PEM certificate, or
// roots it cannot read, is reason StartError.
//
// A credential shorter than 8 bytes (frame.MinCredentialBytes) once trimmed of
// surrounding white space would match ordinary output: the body is not run, reason
// CredentialTooShort, exit 125, and the frame's error names the variable or file, never
// the value ("credential API_TOKEN is 3 bytes; at least 8 are needed to redact it";
// "credential file <name> ..." for a file). In warm mode this is reported after the
// Handover, in a frame signed for its call (a Tool with credentials has no warm pool).
//
// The body's stdout and stderr are redacted before anything is kept, counted or copied
// to the container log: every occurrence of a form of a credential becomes "[REDACTED]".
// The forms of a value are the value as is and trimmed of surrounding white space (a
// Secret often ends with a newline), and of each of those: standard and URL-safe base64,
// padded and not; lowercase and uppercase hex; URL query escaping (url.QueryEscape) and
// path escaping (url.PathEscape); and the inside of a JSON string as encoding/json writes
// it, with HTML escaping (<, >, & as \u003c ...) and without. At each position the longest
// form that matches is replaced, and the scan resumes after it: overlapping occurrences
// count once, adjacent ones each. A form split across the body's writes is recognised:
// bytes that may start a form are held back (at most the longest form's length less one)
// until the next write or the end of the stream decides; everything else is written at
// once, so the log is not delayed.
//
// The value inside longer base64 data is recognised too: the Basic-auth header that
// "curl -v" and git (GIT_TRACE_CURL) print, "Authorization: Basic " and the base64 of
// "user:" or "oauth2:" and the token, or any data around it. Its first byte sits at one of
// the three offsets of a 3-byte group, and at each the encoding holds a run of characters
// that depends on the value's bytes alone, its core: at offset a, for n bytes, characters
// ⌈8a/6⌉ up to (not including) ⌊8(a+n)/6⌋ of the encoding of a filler bytes and the value.
// The three cores, in both alphabets, are forms, at least 10 characters (60 of the value's
// bits) for the shortest value redacted. The core is what is replaced: the character at
// each end that also carries its neighbours' bits (at most 4 of the value's) stays, so
// that every form is a fixed string and the scan stays one pass ("dXNlcjp[REDACTED]Q=="
// for "user:" and a 26-byte token). The cores are shorter than the value's own base64, so
// the hold-back bound above is unchanged.
//
// The frame's "redactions" is how many were replaced, in stdout and stderr together
// (also in the pointer of a frame carried in the log); never what. "stdoutBytes",
// "truncated" and "stderrBytes" describe the redacted streams: the frame's stdout is a
// prefix of the redacted stdout, and each replacement counts as the 10 bytes of
// "[REDACTED]". The runner's own "error" is redacted too (a command that cannot be
// started is named in it, and the kubelet may have expanded a credential into the
// command), without counting.
//
// Not recognised: base64 broken across lines inside the value's core (base64(1) wraps at
// 76 columns, PEM at 64), base32, gzip and any other encoding or escaping, an encoding of
// an encoding (the base64 of the hex), mixed case hex; the value transformed (rot13,
// reversed, split by other bytes, one character per line); and output the body writes
// elsewhere than its stdout and stderr (files, the network). Redaction guards against a
// body that discloses a credential by mistake, not one that means to leak it: a
// credentialled tool that runs model-chosen code (a shell, an interpreter) hands the model
// its value, which it can have printed in any of those shapes, and no redactor catches
// them all. The way to keep a token from such a tool is not to give it to the body but to
// inject it outside: sandbox.egress.allow[].credential, which the egress proxy adds to
// the body's requests (above). The
// TOOLGATE_SECRET_FILE_<i> copies are in the signer's container, out of the body's reach.
//
// # Exit codes
//
//	tool's code   the tool exited (frame "exitCode" is the same)
//	128+N         signal N killed the tool (frame "signal" set)
//	125           the runner refused or failed: reason ArgumentsDigestMismatch,
//	              ArgumentsFileError, InvalidConfiguration, HandoverRefused, CredentialTooShort
//	              or BodyLost, or the termination message could not be written (then there is
//	              no frame); the body side: the signer could not be reached, or refused the call
//	126           reason StartError
//	127           reason CommandNotFound
//
// A session Pod's runners exit otherwise (Session mode): 0 when stopped, 125 when the
// session ended, the reason in the signer's termination message; never a call's code.
//
// A tool may itself exit 125..127; the frame's "reason" (empty when the tool
// ran) tells the cases apart.
//
// The runner's own diagnostics go to stderr, prefixed "toolgate-runner: ".
//
// Not done: as PID 1 the one-shot runner reaps orphaned processes only when it delivers
// (after killing them), and forwards signals to the tool's process only, not to its
// process group (session mode does both after every call).
package main
