package main

import (
	"io"
	"os"
	"os/exec"
	"time"
)

// stdio holds the pipes to the tool's stdin, stdout and stderr. The runner
// manages them itself (rather than letting os/exec copy) so that it can stop
// reading when a process left behind by the tool keeps them open, and report
// that.
type stdio struct {
	child           []*os.File // the tool's ends, closed in the runner after start
	inW, outR, errR *os.File
	outDone         chan struct{}
	errDone         chan struct{}
}

func newStdio(cmd *exec.Cmd) (*stdio, error) {
	var p [3][2]*os.File
	for i := range p {
		r, w, err := os.Pipe()
		if err != nil {
			for _, q := range p[:i] {
				q[0].Close()
				q[1].Close()
			}
			return nil, err
		}
		p[i] = [2]*os.File{r, w}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p[0][0], p[1][1], p[2][1]
	return &stdio{
		child: []*os.File{p[0][0], p[1][1], p[2][1]},
		inW:   p[0][1], outR: p[1][0], errR: p[2][0],
		outDone: make(chan struct{}), errDone: make(chan struct{}),
	}, nil
}

func (s *stdio) closeAll() {
	for _, f := range append(s.child, s.inW, s.outR, s.errR) {
		_ = f.Close()
	}
}

// run starts copying after the tool has started: args to its stdin (then
// closed; write errors such as EPIPE from a tool that does not read stdin are
// ignored), its stdout to out and its stderr to errs.
func (s *stdio) run(args []byte, out, errs io.Writer) {
	for _, f := range s.child {
		_ = f.Close()
	}
	go func() {
		_, _ = s.inW.Write(args)
		_ = s.inW.Close()
	}()
	go copyTo(out, s.outR, s.outDone)
	go copyTo(errs, s.errR, s.errDone)
}

// copyTo copies r to w until end of file (or drain's deadline), then closes w when it is
// an io.Closer (a redactor: it writes what it held back) before it reports done.
func copyTo(w io.Writer, r *os.File, done chan<- struct{}) {
	_, _ = io.Copy(w, r)
	if c, ok := w.(io.Closer); ok {
		_ = c.Close()
	}
	_ = r.Close()
	close(done)
}

// drain is called once the tool has exited: it stops feeding stdin and waits
// until stdout and stderr reach end of file, or at most grace; then it stops
// reading them. It reports whether both reached end of file.
func (s *stdio) drain(grace time.Duration) bool {
	_ = s.inW.SetWriteDeadline(time.Now())
	timer := time.NewTimer(grace)
	defer timer.Stop()
	clean := true
	for _, ch := range []chan struct{}{s.outDone, s.errDone} {
		select {
		case <-ch:
		case <-timer.C:
			clean = false
			_ = s.outR.SetReadDeadline(time.Now())
			_ = s.errR.SetReadDeadline(time.Now())
			<-ch
		}
	}
	return clean
}
