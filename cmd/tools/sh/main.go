// Command sh runs {"command": "..."} with busybox `sh -c` (applets are preferred over PATH,
// so wget, ls, cat… work in an image that holds only /bin/busybox) and returns its exit
// code, stdout and stderr. A non-zero exit is an isError result carrying the same fields.
// It runs in the session workspace (/workspace) when its Pod mounts one, else in /tmp.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

// maxStream bounds what is kept of each of stdout and stderr.
const maxStream = 256 << 10

type args struct {
	Command string `json:"command"`
}

type result struct {
	IsError  bool   `json:"isError,omitempty"`
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr,omitempty"`
}

func main() { toolio.Main(run) }

func busybox() string {
	if p := os.Getenv("TOOLGATE_BUSYBOX"); p != "" {
		return p
	}
	return "/bin/busybox"
}

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return nil, errors.New("command is empty")
	}
	cmd := exec.Command(busybox(), "sh", "-c", a.Command)
	cmd.Dir = workDir()
	cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		res.IsError = true
		res.Error = fmt.Sprintf("the command exited with code %d", res.ExitCode)
		if last := lastLine(res.Stderr); last != "" {
			res.Error += ": " + last
		}
	case err != nil:
		return nil, fmt.Errorf("running busybox sh: %w", err)
	}
	return res, nil
}

// capped keeps the first maxStream bytes written to it and drops the rest.
type capped struct {
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := maxStream - c.buf.Len()
	if room >= len(p) {
		return c.buf.Write(p)
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (c *capped) String() string {
	s := c.buf.String()
	for !utf8.ValidString(s) && len(s) > 0 && c.dropped > 0 {
		s = s[:len(s)-1] // a character cut at the limit
	}
	if c.dropped > 0 {
		s += fmt.Sprintf("\n[%d more bytes dropped]", c.dropped)
	}
	return s
}

// workDir is where the command runs: the session workspace when the Pod mounts one (the
// command then works on the session's files), else the temporary folder.
func workDir() string {
	if info, err := os.Stat(wsfs.RootPath()); err == nil && info.IsDir() {
		return wsfs.RootPath()
	}
	return os.TempDir()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}
