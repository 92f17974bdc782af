package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// sessionPod is a session Pod's two runners as real processes: the signer (the handover
// public keys and its TLS files only) and the body side, with temporary directories
// standing in for /tmp, $HOME and /workspace.
type sessionPod struct {
	t                 *testing.T
	signer, body      *invocation
	tmp, home, ws     string
	sc, bc            *exec.Cmd
	addr              string
	serr              *lockedBuffer
	clientCert, rogue tls.Certificate
	serverCA          *x509.CertPool
	cancel            context.CancelFunc
}

func newSessionPod(t *testing.T) *sessionPod {
	t.Helper()
	p := &sessionPod{t: t, signer: newInvocation(t, podcontract.SignFlag)}
	p.body = newInvocation(t, append([]string{podcontract.BodyFlag}, sh(sessionTool)...)...)
	warmEnv(p.signer)
	delete(p.signer.env, podcontract.EnvWarm)
	p.signer.env[podcontract.EnvSession] = podcontract.SessionOn
	p.signer.env[podcontract.EnvSessionAddr] = "127.0.0.1:0"
	p.signer.env[podcontract.EnvSessionTLSDir] = p.writePKI()
	p.tmp, p.home, p.ws = mkdir(t, p.body.dir, "tmp"), mkdir(t, p.body.dir, "home"), mkdir(t, p.body.dir, "workspace")
	p.body.env = map[string]string{
		podcontract.EnvTerminationPath: filepath.Join(p.body.dir, "termination-log"),
		podcontract.EnvSession:         podcontract.SessionOn,
		podcontract.EnvSessionWipe:     p.tmp + "," + p.home,
		podcontract.EnvWorkspace:       p.ws,
		"HOME":                         p.home, "T": p.tmp, "WS": p.ws,
	}
	addr, abstract := socketPath(t), abstractName(t)
	p.signer.env[podcontract.EnvSignerSocket], p.signer.env[podcontract.EnvSignerAbstract] = addr, abstract
	p.body.env[podcontract.EnvSignerSocket], p.body.env[podcontract.EnvSignerAbstract] = addr, abstract
	return p
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// start starts the signer, reads the operator's address from its log, then starts the
// body side (the kubelet's order).
func (p *sessionPod) start() {
	t := p.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	p.cancel = cancel
	t.Cleanup(cancel)
	p.sc = p.signer.command(ctx)
	pipe, err := p.sc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.sc.Start(); err != nil {
		t.Fatal(err)
	}
	p.serr = &lockedBuffer{}
	lines := bufio.NewReader(pipe)
	const said = "session: listening for the operator at "
	for p.addr == "" {
		line, err := lines.ReadString('\n')
		_, _ = p.serr.Write([]byte(line))
		if err != nil {
			t.Fatalf("the signer ended before it listened: %q", p.serr.String())
		}
		if _, a, ok := strings.Cut(line, said); ok {
			p.addr = strings.TrimSpace(a)
		}
	}
	go func() { _, _ = io.Copy(p.serr, lines) }()
	p.bc = p.body.command(ctx)
	if err := p.bc.Start(); err != nil {
		t.Fatal(err)
	}
}

// wait waits for both runners to end (after a session end, or stop when signalled).
func (p *sessionPod) wait() (signerCode, bodyCode int) {
	_ = p.sc.Wait()
	_ = p.bc.Wait()
	return p.sc.ProcessState.ExitCode(), p.bc.ProcessState.ExitCode()
}

// stop ends an idle session as the kubelet does, SIGTERM to both, and wants exit 0 of both.
func (p *sessionPod) stop() {
	p.t.Helper()
	_ = p.sc.Process.Signal(syscall.SIGTERM)
	_ = p.bc.Process.Signal(syscall.SIGTERM)
	if s, b := p.wait(); s != 0 || b != 0 {
		p.t.Fatalf("stopped idle: signer exit %d, body side exit %d (signer log %q)", s, b, p.serr.String())
	}
}

// endReason is the signer's termination message after a session end: an unsigned frame.
func (p *sessionPod) endReason() string {
	p.t.Helper()
	p.signer.unsigned = true
	term, err := os.ReadFile(p.signer.env[podcontract.EnvTerminationPath])
	if err != nil {
		p.t.Fatalf("no termination message: %v (log %q)", err, p.serr.String())
	}
	return p.signer.unsignedFrame(term).Reason
}

// operator is the operator's end of a session connection.
type operator struct {
	t *testing.T
	c *tls.Conn
	r *bufio.Reader
}

// dial connects as the operator (its client certificate), or with cert.
func (p *sessionPod) dial(cert *tls.Certificate) (*operator, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: p.serverCA, ServerName: "toolgate-session"}
	if cert != nil {
		conf.Certificates = []tls.Certificate{*cert}
	}
	c, err := tls.Dial("tcp", p.addr, conf)
	if err != nil {
		return nil, err
	}
	return &operator{t: p.t, c: c, r: bufio.NewReader(c)}, nil
}

func (p *sessionPod) operator() *operator {
	p.t.Helper()
	o, err := p.dial(&p.clientCert)
	if err != nil {
		p.t.Fatal(err)
	}
	return o
}

// call writes h and returns the termination message of the one ResultLine it gets back.
func (o *operator) call(h frame.Handover) (string, error) {
	if _, err := o.c.Write(handoverLine(o.t, h)); err != nil {
		return "", err
	}
	var got []byte
	for {
		line, err := o.r.ReadBytes('\n')
		got = append(got, line...)
		if msg, ok := frame.LastResultLine(got); ok {
			return msg, nil
		}
		if err != nil {
			return "", err
		}
	}
}

// sessionCall is a Handover of a session call: its own call uid (attempt 1, that attempt's
// key), the arguments, a minute's deadline and env, signed for testPodUID.
func sessionCall(callUID, args string, env ...string) frame.Handover {
	h := frame.Handover{CallUID: callUID, Attempt: 1, AttemptKey: frame.AttemptKey(testKey, callUID, 1),
		Arguments: []byte(args), ArgumentsDigest: frame.DigestOf([]byte(args)), DeadlineMs: 60_000, Env: env}
	return frame.SignHandover([][]byte{testKey}, testPodUID, h)
}

// decodeFor decodes term, which must verify with callUID's attempt key.
func decodeFor(t *testing.T, callUID, term string) frame.Frame {
	t.Helper()
	f, _, err := frame.Decoder{Key: frame.AttemptKey(testKey, callUID, 1)}.DecodeTermination(term)
	if err != nil {
		t.Fatalf("the frame of %s: %v (%.200q)", callUID, err, term)
	}
	return f
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writePKI writes the signer's TLS files (a server certificate of a CA the operator
// trusts, the operator's client CA) and keeps the operator's client certificate and a
// rogue one (another CA's) for the test.
func (p *sessionPod) writePKI() string {
	t := p.t
	dir := mkdir(t, p.signer.dir, "tls")
	serverCA, serverCAKey := newCA(t, "server CA")
	clientCA, clientCAKey := newCA(t, "operator client CA")
	rogueCA, rogueCAKey := newCA(t, "rogue CA")
	p.serverCA = x509.NewCertPool()
	p.serverCA.AddCert(serverCA)
	srv := leaf(t, serverCA, serverCAKey, x509.ExtKeyUsageServerAuth)
	p.clientCert = leaf(t, clientCA, clientCAKey, x509.ExtKeyUsageClientAuth)
	p.rogue = leaf(t, rogueCA, rogueCAKey, x509.ExtKeyUsageClientAuth)
	keyDER, err := x509.MarshalPKCS8PrivateKey(srv.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		podcontract.SessionTLSCert:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate[0]}),
		podcontract.SessionTLSKey:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		podcontract.SessionClientCA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCA.Raw}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var serial atomic.Int64

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func leaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: "toolgate-session"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"toolgate-session"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
