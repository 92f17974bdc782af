package gateway

import (
	"bufio"
	"bytes"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the SDK's newline-delimited transport over in and out, except that
// a line which is not JSON (-32700), not JSON-RPC or a batch (-32600) is answered with a JSON-RPC
// error (id null) and skipped, where the SDK would end the session: one bad line from a
// client must not take the gateway down. A line longer than mcp.DefaultMaxLineLength
// ends the session, as it does in the SDK.
func stdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	pr, pw := io.Pipe()
	w := &lockedWriter{w: out}
	go filterLines(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// filterLines copies the JSON-RPC lines of in to pw and answers the others on out.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), mcp.DefaultMaxLineLength)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		code, msg := checkJSONRPC(line)
		if code == 0 && line[0] == '[' {
			// The SDK's stdio transport ends the session on a batch (MCP dropped
			// batching in 2025-06-18): answer it and go on.
			code, msg = jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported; send one message per line"
		}
		if code != 0 {
			if _, err := out.Write(rpcError(code, msg)); err != nil {
				break
			}
			continue
		}
		if _, err := pw.Write(append(liftTaskParams(bytes.Clone(line)), '\n')); err != nil {
			return // the session has ended
		}
	}
	pw.CloseWithError(sc.Err()) // nil: io.EOF for the SDK, the client has gone
}

// lockedWriter serialises whole-line writes of the SDK and of filterLines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does not close the underlying writer (stdout outlives the session).
func (l *lockedWriter) Close() error { return nil }
