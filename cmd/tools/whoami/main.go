// Command whoami reports what the sandbox looks like from inside a tool Pod, for end-to-end
// checks of the Job builder: ids, capabilities, no_new_privs, seccomp, whether the root
// filesystem and /tmp are writable, whether a service-account token is mounted.
// {"format": "text"} gives a one-line summary instead of the JSON object.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"

type report struct {
	UID                        int      `json:"uid"`
	GID                        int      `json:"gid"`
	EUID                       int      `json:"euid"`
	Groups                     []int    `json:"groups"`
	RootFilesystemWritable     bool     `json:"rootFilesystemWritable"`
	TmpWritable                bool     `json:"tmpWritable"`
	ServiceAccountTokenMounted bool     `json:"serviceAccountTokenMounted"`
	CapEff                     string   `json:"capEff"`
	NoNewPrivs                 bool     `json:"noNewPrivs"`
	Seccomp                    string   `json:"seccomp"`
	ArgsFile                   string   `json:"argsFile"`
	Hostname                   string   `json:"hostname"`
	Errors                     []string `json:"errors,omitempty"`
}

func main() { toolio.Main(run) }

type args struct {
	Format string `json:"format"`
}

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	r := inspect()
	switch a.Format {
	case "", "json":
		return r, nil
	case "text":
		return toolio.Raw(r.text()), nil
	}
	return nil, fmt.Errorf("format must be json or text, not %q", a.Format)
}

func inspect() report {
	r := report{UID: os.Getuid(), GID: os.Getgid(), EUID: os.Geteuid(), ArgsFile: os.Getenv(podcontract.EnvArgsFile)}
	r.Groups, _ = os.Getgroups()
	if r.Groups == nil {
		r.Groups = []int{}
	}
	r.Hostname, _ = os.Hostname()
	r.RootFilesystemWritable = writable("/")
	r.TmpWritable = writable(os.TempDir())
	_, err := os.Stat(tokenPath)
	r.ServiceAccountTokenMounted = err == nil
	status, err := procStatus()
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	r.CapEff = status["CapEff"]
	r.NoNewPrivs = status["NoNewPrivs"] == "1"
	r.Seccomp = seccompMode(status["Seccomp"])
	return r
}

// text is the report on one line, for people: rootfs ro|RW, token none|MOUNTED.
func (r report) text() string {
	rootfs, token, caps := "ro", "none", "none"
	if r.RootFilesystemWritable {
		rootfs = "RW"
	}
	if r.ServiceAccountTokenMounted {
		token = "MOUNTED"
	}
	if r.CapEff != "0000000000000000" {
		caps = r.CapEff
	}
	return fmt.Sprintf("uid=%d gid=%d rootfs=%s tmp=%s token=%s caps=%s nnp=%t seccomp=%s\n",
		r.UID, r.GID, rootfs, map[bool]string{true: "rw", false: "ro"}[r.TmpWritable], token, caps, r.NoNewPrivs, r.Seccomp)
}

// writable tries to create (and remove) a file in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".toolgate-whoami-*")
	if err != nil {
		return false
	}
	_ = f.Close()
	_ = os.Remove(filepath.Clean(f.Name()))
	return true
}

func procStatus() (map[string]string, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, errors.New("reading /proc/self/status: " + err.Error())
	}
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, s.Err()
}

func seccompMode(v string) string {
	switch v {
	case "0":
		return "disabled"
	case "1":
		return "strict"
	case "2":
		return "filter"
	}
	return "unknown"
}
