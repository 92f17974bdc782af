// Command responder is the in-Pod side of test/bench/transport: a stand-in for a session
// runner that answers small handover requests with small result frames. One static binary,
// three modes (argv[1]):
//
//	serve   PID 1: answers line-delimited requests on stdin (stdout), on a Unix socket
//	        (/run/tg/resp.sock), on plain TCP (:8080) and on mutual TLS (:8443).
//	client  one exec'd call: reads one request line on stdin, forwards it to PID 1 over the
//	        Unix socket, prints the response line, exits.
//	echo    bare exec: prints a fixed response line, reads nothing, exits.
//	dial    (with ADDR) one TCP connection to ADDR (2 s timeout), a line out, a line back;
//	        prints "reached ADDR" or the error (the NetworkPolicy check).
//	rtt     (with ADDR N) N round trips to ADDR on a new TCP connection each, then N on one
//	        kept-alive connection; prints their p50/p95 (a Pod-to-Pod client).
//
// Every request carries an HMAC-SHA256 (key TG_KEY, hex) over its id, seq and args, checked
// before it is answered; a response echoes the request's id (the only thing that ties a
// response to its request on the attach series, whose stdout is a broadcast).
package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const socketPath = "/run/tg/resp.sock"

// Request is the handover stand-in (~200 bytes on the wire).
type Request struct {
	ID   string          `json:"id"`
	Seq  int             `json:"seq"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	MAC  string          `json:"mac"`
}

// Response is the result-frame stand-in (~300 bytes on the wire).
type Response struct {
	ID     string `json:"id"`
	Seq    int    `json:"seq"`
	Exit   int    `json:"exit"`
	Stdout string `json:"stdout,omitempty"`
	Error  string `json:"error,omitempty"`
	Sig    string `json:"sig"`
}

// MAC is the request's HMAC-SHA256 under key, hex.
func MAC(key []byte, id string, seq int, args []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%d\n", id, seq)
	m.Write(args)
	return hex.EncodeToString(m.Sum(nil))
}

func main() {
	mode := "serve"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	var err error
	switch mode {
	case "serve":
		err = serve()
	case "client":
		err = client()
	case "dial":
		if len(os.Args) < 3 {
			err = fmt.Errorf("dial ADDR")
			break
		}
		err = dial(os.Args[2])
	case "rtt":
		if len(os.Args) < 4 {
			err = fmt.Errorf("rtt ADDR N")
			break
		}
		err = rtt(os.Args[2], os.Args[3])
	case "echo":
		_, err = os.Stdout.Write(answer(nil, []byte(`{"id":"bare","seq":0,"tool":"echo","args":{}}`)))
	default:
		err = fmt.Errorf("unknown mode %q (serve, client, echo)", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "responder:", err)
		os.Exit(1)
	}
}

// answer is the response line to one request line; a nil key skips the MAC check.
func answer(key, line []byte) []byte {
	var req Request
	resp := Response{Exit: 0}
	if err := json.Unmarshal(line, &req); err != nil {
		resp.Exit, resp.Error = 2, "bad request: "+err.Error()
	} else {
		resp.ID, resp.Seq = req.ID, req.Seq
		if key != nil && !hmac.Equal([]byte(MAC(key, req.ID, req.Seq, req.Args)), []byte(req.MAC)) {
			resp.Exit, resp.Error = 3, "bad mac"
		} else {
			resp.Stdout = "eyJtZXNzYWdlIjoiaGkiLCJwYWRkaW5nIjoiYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhIn0K"
		}
	}
	sig := sha256.Sum256(line)
	resp.Sig = hex.EncodeToString(sig[:]) + hex.EncodeToString(sig[:16])
	b, _ := json.Marshal(resp)
	return append(b, '\n')
}

func serve() error {
	key, err := hex.DecodeString(os.Getenv("TG_KEY"))
	if err != nil || len(key) == 0 {
		return fmt.Errorf("TG_KEY: a hex key is required")
	}
	// stdin (attach): the container's stdout is shared by every attach session.
	var outMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			resp := answer(key, sc.Bytes())
			outMu.Lock()
			_, _ = os.Stdout.Write(resp)
			outMu.Unlock()
		}
		fmt.Fprintln(os.Stderr, "responder: stdin closed:", sc.Err())
	}()
	_ = os.Remove(socketPath)
	ul, err := net.Listen("unix", socketPath)
	if err != nil {
		return err
	}
	go accept(ul, key)
	tl, err := net.Listen("tcp", ":8080")
	if err != nil {
		return err
	}
	go accept(tl, key)
	cfg, err := serverTLS()
	if err != nil {
		return err
	}
	sl, err := tls.Listen("tcp", ":8443", cfg)
	if err != nil {
		return err
	}
	accept(sl, key)
	return nil
}

// serverTLS: the server's certificate and key (TG_TLS_CERT, TG_TLS_KEY, PEM), and client
// certificates required and verified against TG_CLIENT_CA (mutual TLS).
func serverTLS() (*tls.Config, error) {
	cert, err := tls.X509KeyPair([]byte(os.Getenv("TG_TLS_CERT")), []byte(os.Getenv("TG_TLS_KEY")))
	if err != nil {
		return nil, fmt.Errorf("TG_TLS_CERT/TG_TLS_KEY: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(os.Getenv("TG_CLIENT_CA"))) {
		return nil, fmt.Errorf("TG_CLIENT_CA: no certificate")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

func accept(l net.Listener, key []byte) {
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "responder: accept:", err)
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadBytes('\n')
				if len(line) > 0 {
					if _, werr := c.Write(answer(key, line)); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func client() error {
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if err != nil && (!errors.Is(err, io.EOF) || len(line) == 0) {
		return fmt.Errorf("stdin: %w", err)
	}
	if !strings.HasSuffix(string(line), "\n") {
		line = append(line, '\n')
	}
	c, err := net.Dial("unix", socketPath)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write(line); err != nil {
		return err
	}
	resp, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(resp)
	return err
}

func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("{}\n")); err != nil {
		return err
	}
	if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil {
		return err
	}
	fmt.Println("reached", addr)
	return nil
}

func rtt(addr, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return fmt.Errorf("rtt: bad count %q", count)
	}
	key, _ := hex.DecodeString(os.Getenv("TG_KEY"))
	args := []byte(`{"message":"hi"}`)
	once := func(c net.Conn, r *bufio.Reader, i int) error {
		id := fmt.Sprintf("rtt-%d", i)
		line, _ := json.Marshal(Request{ID: id, Seq: i, Tool: "echo", Args: args, MAC: MAC(key, id, i, args)})
		if _, err := c.Write(append(line, '\n')); err != nil {
			return err
		}
		_, err := r.ReadBytes('\n')
		return err
	}
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		at := func(p float64) float64 {
			return float64(ds[min(len(ds)-1, int(p*float64(len(ds))+0.999999)-1)]) / float64(time.Millisecond)
		}
		fmt.Printf("%s n=%d p50 %.2f ms p95 %.2f ms p99 %.2f ms\n", name, len(ds), at(0.5), at(0.95), at(0.99))
	}
	var fresh, kept []time.Duration
	for i := range n {
		start := time.Now()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		err = once(c, bufio.NewReader(c), i)
		_ = c.Close()
		if err != nil {
			return err
		}
		fresh = append(fresh, time.Since(start))
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	r := bufio.NewReader(c)
	for i := range n {
		start := time.Now()
		if err := once(c, r, n+i); err != nil {
			return err
		}
		kept = append(kept, time.Since(start))
	}
	report("pod-tcp-new ", fresh)
	report("pod-tcp-keep", kept)
	return nil
}
