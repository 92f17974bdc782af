package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Defaults and bounds.
const (
	defaultArgsFile   = "/toolgate/args.json"
	defaultMaxOutput  = 1 << 20
	defaultStderrTail = 4096
	defaultIOGrace    = 2 * time.Second
	// maxMaxOutput keeps the worst-case log block (about 1.6 times the kept
	// stdout) well below the kubelet's default log rotation size (10 MiB).
	maxMaxOutput  = frame.MaxOutputLimit
	maxStderrTail = frame.MaxStderrTail
	maxErrorLen   = frame.MaxErrorLen
)

type config struct {
	args            []byte
	argsDigest      string
	argsFile        string
	maxOutput       int
	stderrTail      int
	terminationPath string
	marker          string
	// handoverKeys are the public keys a warm Pod's Handover must be signed with
	// (TOOLGATE_HANDOVER_KEYS).
	handoverKeys []ed25519.PublicKey
	// frameKey signs the frame: the attempt's key (cold: TOOLGATE_ATTEMPT_KEY; warm: the
	// authenticated Handover's). nil: unsigned (no one will trust it).
	frameKey []byte
	// mode is how this runner takes part: alone (runs the tool and signs), as the signer
	// (holds the key, runs nothing) or as the body side (runs the tool, holds no key).
	mode mode
	// signerAddress is the Unix socket (a file in the link volume) and signerAbstract the
	// abstract one the signer listens on and the body side connects to (abstract first).
	signerAddress  string
	signerAbstract string
	// egressCABundle is where the body side writes the egress CA bundle (egressTrust): in
	// the link volume, beside signerAddress (podcontract.EgressCABundle in a Pod).
	egressCABundle string
	// podUID is the warm Pod's own uid (TOOLGATE_POD_UID): a Handover is for one Pod.
	podUID   string
	ioGrace  time.Duration
	copySelf string
	command  []string
	// warm: the arguments came in a Handover on stdin (warm.go), not the environment.
	warm        bool
	traceparent string
	handoverErr error
	// session: a session Pod's runner (session.go, session_body.go); sessionTLSDir and
	// sessionAddr are the signer's, wipeDirs and workspace the body side's.
	session       bool
	sessionTLSDir string
	sessionAddr   string
	// sessionRelay (a Unix socket path; "" none): the signer listens for the operator there,
	// and the body side relays the operator's TCP connections to it (session_relay.go).
	sessionRelay string
	wipeDirs     []string
	workspace    string
	// The current session call's own variables for the body (NAME=value), and the call's
	// deadline (a session call's Handover's; a cold or warm call's TOOLGATE_DEADLINE_MS in
	// the signer, which sends it to the body side; 0: none).
	callEnv  []string
	deadline time.Duration
	// abort closes when the signer went away during a session call (bodySession).
	abort <-chan struct{}
	// credentials are the Secret values the body is given (TOOLGATE_SECRET_ENV and
	// TOOLGATE_SECRET_FILES), and those its workspace may hold (TOOLGATE_REDACT_<i>),
	// redacted from its output (redact.go).
	credentials []credential
}

// parseConfig reads the environment (lookupEnv is os.LookupEnv's kind: a credential
// variable set to "" is not one that is missing), then the flags, which override it. It
// always returns a config whose terminationPath and marker can be used to
// report the error, if any. flag.ErrHelp is returned for -h.
func parseConfig(argv []string, lookupEnv func(string) (string, bool), usage io.Writer) (config, error) {
	getenv := func(k string) string {
		v, _ := lookupEnv(k)
		return v
	}
	cfg := config{
		args:            []byte(getenv(podcontract.EnvArgs)),
		argsDigest:      getenv(podcontract.EnvArgsDigest),
		argsFile:        envOr(getenv, podcontract.EnvArgsFile, defaultArgsFile),
		terminationPath: envOr(getenv, podcontract.EnvTerminationPath, podcontract.TerminationPath),
		marker:          envOr(getenv, podcontract.EnvResultMarker, frame.DefaultMarker),
		ioGrace:         defaultIOGrace,
	}
	cfg.warm = getenv(podcontract.EnvWarm) == podcontract.WarmOn
	// A cold attempt's trace context (a warm one's comes with its Handover): the signer hands
	// it to the body side, which gives it to the tool.
	cfg.traceparent = getenv(podcontract.EnvTraceparent)
	cfg.signerAddress = envOr(getenv, podcontract.EnvSignerSocket, podcontract.SignerSocket)
	cfg.signerAbstract = envOr(getenv, podcontract.EnvSignerAbstract, podcontract.SignerAbstractSocket)
	// The bundle goes into the link volume, beside the signer's socket.
	cfg.egressCABundle = filepath.Join(filepath.Dir(cfg.signerAddress), filepath.Base(podcontract.EgressCABundle))
	cfg.podUID = getenv(podcontract.EnvPodUID)
	cfg.session = getenv(podcontract.EnvSession) == podcontract.SessionOn
	cfg.sessionTLSDir = envOr(getenv, podcontract.EnvSessionTLSDir, podcontract.SessionTLSDir)
	cfg.sessionAddr = envOr(getenv, podcontract.EnvSessionAddr, ":"+strconv.Itoa(podcontract.SessionPort))
	cfg.sessionRelay = getenv(podcontract.EnvSessionRelay)
	cfg.workspace = envOr(getenv, podcontract.EnvWorkspace, podcontract.WorkspaceMountPath)
	cfg.wipeDirs = strings.Split(envOr(getenv, podcontract.EnvSessionWipe, "/tmp,/dev/shm"), ",")
	if getenv(podcontract.EnvSessionWipe) == "" && getenv("HOME") != "" {
		cfg.wipeDirs = append(cfg.wipeDirs, getenv("HOME"))
	}
	deadlineMs, err5 := envInt(getenv, podcontract.EnvDeadlineMs, 0)
	cfg.deadline = time.Duration(deadlineMs) * time.Millisecond
	maxOut, err1 := envInt(getenv, podcontract.EnvMaxOutput, defaultMaxOutput)
	tail, err2 := envInt(getenv, podcontract.EnvStderrTail, defaultStderrTail)
	err3 := cfg.readKeys(getenv)
	var err4 error
	cfg.credentials, err4 = readCredentials(lookupEnv)
	cfg.credentials = append(cfg.credentials, readRedactions(lookupEnv)...)

	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Func("args", "canonical JSON arguments (default $"+podcontract.EnvArgs+")", func(s string) error {
		cfg.args = []byte(s)
		return nil
	})
	fs.StringVar(&cfg.argsDigest, "args-digest", cfg.argsDigest, "sha256:<hex> of the arguments ($"+podcontract.EnvArgsDigest+")")
	fs.StringVar(&cfg.argsFile, "args-file", cfg.argsFile, "where to write the arguments; - for no file ($"+podcontract.EnvArgsFile+")")
	fs.IntVar(&cfg.maxOutput, "max-output", maxOut, "stdout bytes kept ($"+podcontract.EnvMaxOutput+")")
	fs.IntVar(&cfg.stderrTail, "stderr-tail", tail, "stderr tail bytes kept ($"+podcontract.EnvStderrTail+")")
	fs.StringVar(&cfg.terminationPath, "termination-path", cfg.terminationPath, "termination message file ($"+podcontract.EnvTerminationPath+")")
	fs.StringVar(&cfg.marker, "result-marker", cfg.marker, "log block marker ($"+podcontract.EnvResultMarker+")")
	fs.DurationVar(&cfg.ioGrace, "io-grace", cfg.ioGrace, "how long to keep reading output after the tool exits")
	fs.StringVar(&cfg.copySelf, strings.TrimPrefix(podcontract.CopySelfFlag, "--"), "", "copy the runner executable to this path and exit")
	fs.BoolFunc(strings.TrimPrefix(podcontract.SignFlag, "--"), "be the signer: hold the frame key, run nothing; the body side connects", cfg.setMode(modeSigner))
	fs.BoolFunc(strings.TrimPrefix(podcontract.BodyFlag, "--"), "be the body side: run the tool for the signer, hold no key", cfg.setMode(modeBody))
	err := fs.Parse(argv)
	cfg.command = fs.Args()
	if errors.Is(err, flag.ErrHelp) {
		return cfg, err
	}
	return cfg, errors.Join(err1, err2, err3, err4, err5, err, cfg.check())
}

// readKeys reads the attempt's frame key (cold) or the Handover public keys (warm).
func (c *config) readKeys(getenv func(string) string) error {
	if v := getenv(podcontract.EnvAttemptKey); v != "" {
		k, err := frame.ParseKey(v)
		if err != nil {
			return fmt.Errorf("%s: %w", podcontract.EnvAttemptKey, err)
		}
		c.frameKey = k
	}
	keys, err := frame.ParsePublicKeys(getenv(podcontract.EnvHandoverKeys))
	if err != nil {
		return fmt.Errorf("%s: %w", podcontract.EnvHandoverKeys, err)
	}
	c.handoverKeys = keys
	return nil
}

// mode is the part a runner plays in its Pod.
type mode int

const (
	// modeAlone: one process runs the tool and signs its frame (a local run, tests).
	modeAlone mode = iota
	// modeSigner: the signer container; the body side connects to it (sign.go).
	modeSigner
	// modeBody: the body's container; it runs the tool for the signer (body.go).
	modeBody
)

func (c *config) setMode(m mode) func(string) error {
	return func(v string) error {
		if v != "true" {
			return fmt.Errorf("takes no value")
		}
		if c.mode != modeAlone && c.mode != m {
			return errors.New("is one of " + podcontract.SignFlag + " and " + podcontract.BodyFlag + ", not both")
		}
		c.mode = m
		return nil
	}
}

func (c *config) check() error {
	var errs []error
	if !frame.ValidMarker(c.marker) {
		errs = append(errs, fmt.Errorf("invalid result marker %q", c.marker))
		c.marker = frame.DefaultMarker
	}
	if c.maxOutput < 0 || c.maxOutput > maxMaxOutput {
		errs = append(errs, fmt.Errorf("max output %d not in [0, %d]", c.maxOutput, maxMaxOutput))
	}
	if c.stderrTail < 0 || c.stderrTail > maxStderrTail {
		errs = append(errs, fmt.Errorf("stderr tail %d not in [0, %d]", c.stderrTail, maxStderrTail))
	}
	if c.deadline < 0 || c.deadline > frame.MaxSessionDeadlineMs*time.Millisecond {
		errs = append(errs, fmt.Errorf("deadline %v not in [0, 24h]", c.deadline))
		c.deadline = 0
	}
	if c.ioGrace <= 0 {
		errs = append(errs, fmt.Errorf("io grace %v must be positive", c.ioGrace))
	}
	if c.argsFile == "" || c.terminationPath == "" {
		errs = append(errs, errors.New("args file and termination path must not be empty"))
	}
	if c.mode == modeSigner && len(c.command) > 0 {
		errs = append(errs, errors.New("the signer runs no command"))
	}
	if c.mode == modeBody && c.warm {
		errs = append(errs, errors.New("the body side takes its arguments from the signer, never a Handover"))
	}
	if c.session && (c.mode == modeAlone || c.warm) {
		errs = append(errs, errors.New("session mode is for the signer and the body side of a session Pod, never warm"))
	}
	if len(c.command) == 0 && c.copySelf == "" && c.mode != modeSigner {
		errs = append(errs, errors.New("no tool command given (runner [flags] -- COMMAND [ARGS...])"))
	}
	return errors.Join(errs...)
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(getenv func(string) string, key string, def int) (int, error) {
	v := getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def, fmt.Errorf("%s: %w", key, err)
	}
	return n, nil
}
