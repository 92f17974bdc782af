package main

import (
	"errors"
	"io"
	"net"
	"time"
)

// relayBound bounds the relayed connections open at once (the operator keeps one per Pod).
const relayBound = 16

// relayOperator is the body side's relay, for a session Pod whose runtime's sandbox holds
// the Pod's address (gVisor: the signer, outside it, cannot be reached at it): it listens
// on TCP at addr and copies each connection's bytes to and from the signer's relay socket,
// both ways, until either side closes. It sees only the mutual-TLS stream, which ends at
// the signer: it can neither read a Handover nor pose as the operator or the signer. It
// runs for the container's life; it returns the listener, or an error when it cannot listen.
func relayOperator(addr, socket string, stderr io.Writer) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	slots := make(chan struct{}, relayBound)
	go func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			select {
			case slots <- struct{}{}:
			default:
				_ = c.Close() // over the bound: the operator dials again
				continue
			}
			go func() {
				defer func() { <-slots }()
				relay(c, socket, stderr)
			}()
		}
	}()
	return ln, nil
}

// relay copies c to the signer's socket and back until one side ends.
func relay(c net.Conn, socket string, stderr io.Writer) {
	defer c.Close()
	s, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		logf(stderr, "session: relaying a connection to the signer: %v", err)
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
}
