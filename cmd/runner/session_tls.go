package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

const (
	// handshakeBound is how long a connection to the session listener has to complete its
	// TLS handshake (with a client certificate the operator's CA issued): the body shares
	// the Pod's network namespace and may connect, but must not hold the listener.
	handshakeBound = 10 * time.Second
	// maxHandshakes bounds the handshakes under way at once; more connections wait in the
	// kernel's backlog.
	maxHandshakes = 16
	// replyBound is how long writing one reply to the operator may take.
	replyBound = 30 * time.Second
)

// sessionTLS is the session listener's configuration: TLS 1.3 only, the server certificate
// and key, and a client certificate required and verified against the client CA, all from
// $TOOLGATE_SESSION_TLS_DIR (a Secret volume in the signer's container only: the body
// cannot read the key, so it can neither be the listener nor the operator).
func sessionTLS(dir string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, podcontract.SessionTLSCert), filepath.Join(dir, podcontract.SessionTLSKey))
	if err != nil {
		return nil, fmt.Errorf("session TLS key pair: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, podcontract.SessionClientCA))
	if err != nil {
		return nil, fmt.Errorf("session client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("session client CA %s holds no PEM certificate", podcontract.SessionClientCA)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}

// listenOperator listens for the operator at cfg.sessionAddr, or, when the body side
// relays, at the relay socket cfg.sessionRelay.
func listenOperator(cfg config) (net.Listener, *tls.Config, error) {
	conf, err := sessionTLS(cfg.sessionTLSDir)
	if err != nil {
		return nil, nil, err
	}
	if cfg.sessionRelay != "" {
		// The body side relays the operator's connections here (session_relay.go).
		_ = os.Remove(cfg.sessionRelay)
		ln, err := net.Listen("unix", cfg.sessionRelay)
		if err != nil {
			return nil, nil, err
		}
		return ln, conf, nil
	}
	ln, err := net.Listen("tcp", cfg.sessionAddr)
	if err != nil {
		return nil, nil, err
	}
	return ln, conf, nil
}

// acceptOperators accepts connections for the session's life and hands on each that
// completes a mutual-TLS handshake within handshakeBound: only the operator holds a
// client certificate of the client CA. A connection that does not is closed (and logged).
// The channel is unbuffered: a connection waits until the session takes it.
func acceptOperators(ln net.Listener, conf *tls.Config, stderr io.Writer) <-chan net.Conn {
	ch := make(chan net.Conn)
	slots := make(chan struct{}, maxHandshakes)
	go func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			slots <- struct{}{}
			go func() {
				tc := tls.Server(c, conf)
				_ = tc.SetDeadline(time.Now().Add(handshakeBound))
				err := tc.Handshake()
				<-slots
				if err != nil {
					logf(stderr, "session: refused a connection from %s: %v", c.RemoteAddr(), err)
					_ = c.Close()
					return
				}
				_ = tc.SetDeadline(time.Time{})
				ch <- tc
			}()
		}
	}()
	return ch
}
