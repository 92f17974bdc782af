// Command imgpack packs static binaries into a one-layer linux image tarball that
// `ctr images import` (and `docker load`) accept, without a Docker engine or a registry.
//
//	go run ./hack/imgpack -name toolgate.local/manager:dev -entrypoint /manager \
//	    -user 65532:65532 -file bin/manager=/manager -file bin/runner=/toolgate/runner \
//	    -out bin/images/manager.tar
//
// The output is deterministic: entries are sorted, owned by root and stamped with a fixed
// time (SOURCE_DATE_EPOCH if set, else the Unix epoch), so equal inputs give equal digests.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// options is everything the command line says about the image.
type options struct {
	name       string
	out        string
	entrypoint []string
	cmd        []string
	user       string
	workdir    string
	env        []string
	arch       string
	entries    []entry
	mtime      time.Time
}

func main() {
	opts, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imgpack:", err)
		os.Exit(2)
	}
	digest, err := pack(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imgpack:", err)
		os.Exit(1)
	}
	fmt.Printf("imgpack: %s %s -> %s\n", opts.name, digest, opts.out)
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("imgpack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var files, dirs, env listFlag
	var entrypoint, cmd string
	fs.StringVar(&o.name, "name", "", "image reference to tag the tarball with, e.g. toolgate.local/runner:dev (required)")
	fs.StringVar(&o.out, "out", "", "output tarball path (required)")
	fs.StringVar(&entrypoint, "entrypoint", "", "entrypoint, split on spaces (e.g. \"/smoke result\")")
	fs.StringVar(&cmd, "cmd", "", "default arguments, split on spaces")
	fs.StringVar(&o.user, "user", "", "user[:group], numeric recommended (no /etc/passwd is written)")
	fs.StringVar(&o.workdir, "workdir", "", "working directory")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture (OS is always linux)")
	fs.Var(&files, "file", "SRC=DST[:MODE] host file to copy into the image (repeatable)")
	fs.Var(&dirs, "dir", "PATH[:MODE] extra directory (repeatable); /dev, /etc, /tmp always exist")
	fs.Var(&env, "env", "KEY=VALUE environment variable (repeatable)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.name == "" || o.out == "" {
		return o, fmt.Errorf("-name and -out are required")
	}
	o.entrypoint = strings.Fields(entrypoint)
	o.cmd = strings.Fields(cmd)
	o.env = env
	for _, f := range files {
		e, err := parseFile(f)
		if err != nil {
			return o, err
		}
		o.entries = append(o.entries, e)
	}
	for _, d := range dirs {
		e, err := parseDir(d)
		if err != nil {
			return o, err
		}
		o.entries = append(o.entries, e)
	}
	mtime, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return o, err
	}
	o.mtime = mtime
	return o, nil
}

func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", v, err)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// buildImage returns the one-layer image the options describe.
func buildImage(o options) (v1.Image, error) {
	data, err := layerBytes(o.entries, o.mtime)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	base, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf := base.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = o.arch
	cf.Created = v1.Time{Time: o.mtime}
	cf.Config.Entrypoint = o.entrypoint
	cf.Config.Cmd = o.cmd
	cf.Config.User = o.user
	cf.Config.WorkingDir = o.workdir
	cf.Config.Env = o.env
	cf.History = []v1.History{{Created: cf.Created, CreatedBy: "toolgate hack/imgpack"}}
	return mutate.ConfigFile(img, cf)
}

// pack writes the image tarball atomically (temp file + rename) and returns its digest.
func pack(o options) (v1.Hash, error) {
	ref, err := name.NewTag(o.name)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := buildImage(o)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return v1.Hash{}, err
	}
	tmp := o.out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return v1.Hash{}, err
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}
