package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// messageKind is what a tunnel's first bytes are.
type messageKind int

const (
	otherMessage messageKind = iota // not read further: passed on as it came
	tlsMessage                      // a TLS handshake record: its ClientHello is checked
	httpMessage                     // an HTTP/1 request line: every request is checked
)

const (
	// recordTypeHandshake starts every TLS record that carries a ClientHello.
	recordTypeHandshake = 0x16
	// extensionEncryptedClientHello (0xfe0d) hides the ClientHello's real server_name.
	extensionEncryptedClientHello = 0xfe0d
)

// sniff tells a tunnel's first message apart without consuming it. Empty lines first are
// skipped (HTTP servers skip them before a request line too). A line that starts like a
// request (a token character or blank) and names "HTTP/" anywhere, in any case, is HTTP and
// must then parse as HTTP/1; such a line longer than maxFirstLine is refused (a server might
// read it as a request); anything else is not read further.
func sniff(br *bufio.Reader) (messageKind, error) {
	b, err := br.Peek(1)
	for err == nil && (b[0] == '\r' || b[0] == '\n') {
		_, _ = br.Discard(1)
		b, err = br.Peek(1)
	}
	switch {
	case err != nil:
		return otherMessage, err
	case b[0] == recordTypeHandshake:
		return tlsMessage, nil
	case !startsLikeRequest(b[0]):
		return otherMessage, nil
	}
	line, err := peekLine(br)
	if err != nil {
		return otherMessage, err
	}
	if bytes.Contains(bytes.ToUpper(line), []byte("HTTP/")) {
		return httpMessage, nil
	}
	return otherMessage, nil
}

// startsLikeRequest reports whether c may start a request line: a token character (RFC 9110
// tchar) or a blank a lenient server might skip.
func startsLikeRequest(c byte) bool { return c == ' ' || c == '\t' || tokenChar(c) }

// tokenChar reports whether c is an RFC 9110 tchar.
func tokenChar(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// peekLine returns the first line without consuming it; errTooLarge past the reader's size.
func peekLine(br *bufio.Reader) ([]byte, error) {
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return b[:i], nil
		}
		// Wait for at least one more byte.
		if _, err := br.Peek(len(b) + 1); errors.Is(err, bufio.ErrBufferFull) {
			return nil, errTooLarge
		} else if err != nil {
			return nil, err
		}
	}
}

// gone reports whether err means the client (or the tunnel's end) closed the stream: no
// message to refuse.
func gone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// errHelloRead stops crypto/tls once it has parsed the ClientHello.
var errHelloRead = errors.New("egress proxy: ClientHello read")

// readClientHello parses a TLS ClientHello with crypto/tls (records reassembled, extensions
// checked as a server would) and answers nothing: the handshake stops in GetConfigForClient,
// and the alert crypto/tls then sends goes nowhere.
func readClientHello(r io.Reader) (*tls.ClientHelloInfo, error) {
	var hello *tls.ClientHelloInfo
	err := tls.Server(readOnlyConn{r}, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hello = h
		return nil, errHelloRead
	}}).Handshake()
	if hello != nil {
		return hello, nil
	}
	return nil, err
}

// helloRefusal is why a tunnel's ClientHello is refused: it must name the tunnel's host
// (case aside) and must not hide the name it means (Encrypted Client Hello).
func (t *tunnelConn) helloRefusal(hello *tls.ClientHelloInfo) string {
	return helloRefusal(hello, t.host)
}

func helloRefusal(hello *tls.ClientHelloInfo, host string) string {
	name, ok := NormalizeHost(hello.ServerName)
	if !ok || name != host || slices.Contains(hello.Extensions, extensionEncryptedClientHello) {
		return RefusedSNIMismatch
	}
	return ""
}

// readOnlyConn hands crypto/tls a client's bytes and takes nothing back.
type readOnlyConn struct{ r io.Reader }

func (c readOnlyConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (readOnlyConn) Write([]byte) (int, error)        { return 0, io.ErrClosedPipe }
func (readOnlyConn) Close() error                     { return nil }
func (readOnlyConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (readOnlyConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (readOnlyConn) SetDeadline(time.Time) error      { return nil }
func (readOnlyConn) SetReadDeadline(time.Time) error  { return nil }
func (readOnlyConn) SetWriteDeadline(time.Time) error { return nil }

// hopHeaders are the request's headers for the proxy's hop only: an Upgrade is not carried
// (after a 101 the stream is no longer HTTP the proxy can check: ws:// is refused that way,
// wss:// is TLS), nor a proxy credential.
var hopHeaders = []string{"Connection", "Keep-Alive", "Upgrade", "Http2-Settings", "Proxy-Connection", "Proxy-Authorization"}

// relayHTTP forwards a plain-HTTP tunnel request by request: each is read whole (its head
// within maxFirstMessage), must name the tunnel's host (URL or Host, and port when given),
// and is written to the destination again as the proxy read it, so the destination sees
// only requests the proxy checked, framed as the proxy framed them.
func (t *tunnelConn) relayHTTP(br *bufio.Reader, in *firstBytes) error {
	for first := true; ; first = false {
		in.limit = maxFirstMessage
		req, err := readRequest(br)
		switch {
		case err != nil && gone(err):
			if first {
				t.settle("")
			}
			if errors.Is(err, io.EOF) && !first {
				return nil // the client is done between requests
			}
			return err
		case err != nil:
			return t.refuse(first, RefusedBadRequest)
		}
		if refusal := requestRefusal(req, t.host, t.port); refusal != "" {
			return t.refuse(first, refusal)
		}
		if first && !t.settle("") {
			return errTunnelRefused
		}
		in.limit = -1 // the body is not held, only passed on
		for _, h := range hopHeaders {
			req.Header.Del(h)
		}
		if _, ok := req.Header["User-Agent"]; !ok {
			req.Header["User-Agent"] = []string{""} // Request.Write would add Go's
		}
		if err := req.Write(t.TCPConn); err != nil {
			return err
		}
	}
}

// readRequest reads the next request, skipping empty lines before it.
func readRequest(br *bufio.Reader) (*http.Request, error) {
	b, err := br.Peek(1)
	for err == nil && (b[0] == '\r' || b[0] == '\n') {
		_, _ = br.Discard(1)
		b, err = br.Peek(1)
	}
	if err != nil {
		return nil, err
	}
	return http.ReadRequest(br)
}

// requestRefusal is why a request in a plain-HTTP tunnel is refused: HTTP/1 only, no
// CONNECT, and its host (the absolute URL's, else the Host header's) must be the tunnel's.
func requestRefusal(req *http.Request, host string, port int32) string {
	if req.ProtoMajor != 1 || req.Method == http.MethodConnect {
		return RefusedBadRequest
	}
	h, p, ok := splitHostPort(req.Host, port)
	if name, named := NormalizeHost(h); !ok || !named || name != host || p != port {
		return RefusedHostMismatch
	}
	return ""
}
