package frame

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"strings"
	"testing"
)

func sessionHandover() Handover {
	args := []byte(`{"q":1}`)
	master := []byte("0123456789abcdef0123456789abcdef")
	return Handover{CallUID: "uid", Attempt: 1, AttemptKey: AttemptKey(master, "uid", 1), Arguments: args,
		ArgumentsDigest: DigestOf(args), DeadlineMs: 5000, Env: []string{"PROXY_URL=http://g:grant@proxy:3128", "A="}, SecretEnv: []string{"PROXY_URL"}}
}

// The auth covers a session Handover's own fields: a deadline, a variable or a secret name
// changed after signing is refused; so is a session Handover stripped of them.
func TestSessionHandoverFieldsAreSigned(t *testing.T) {
	master := []byte("0123456789abcdef0123456789abcdef")
	keys := []ed25519.PublicKey{HandoverPublicKey(master)}
	h := SignHandover([][]byte{master}, "pod", sessionHandover())
	if !VerifyHandover(keys, "pod", h) {
		t.Fatal("the signed session handover does not verify")
	}
	for name, change := range map[string]func(*Handover){
		"deadline":   func(h *Handover) { h.DeadlineMs = 50000 },
		"variable":   func(h *Handover) { h.Env = append([]string{}, "PROXY_URL=http://evil", "A=") },
		"added":      func(h *Handover) { h.Env = append(append([]string{}, h.Env...), "B=1") },
		"secret":     func(h *Handover) { h.SecretEnv = nil },
		"all gone":   func(h *Handover) { h.DeadlineMs, h.Env, h.SecretEnv = 0, nil, nil },
		"env joined": func(h *Handover) { h.Env = []string{h.Env[0] + "\x00" + h.Env[1]} },
	} {
		c := h
		change(&c)
		if VerifyHandover(keys, "pod", c) {
			t.Errorf("%s changed: still verifies", name)
		}
	}
}

func TestCheckSession(t *testing.T) {
	if err := CheckSession(sessionHandover()); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Handover){
		"no deadline":      func(h *Handover) { h.DeadlineMs = 0 },
		"deadline too far": func(h *Handover) { h.DeadlineMs = MaxSessionDeadlineMs + 1 },
		"no equals":        func(h *Handover) { h.Env = []string{"A"} },
		"bad name":         func(h *Handover) { h.Env = []string{"1A=x"} },
		"runner's own":     func(h *Handover) { h.Env = []string{"TOOLGATE_X=/etc/passwd"} },
		"traceparent":      func(h *Handover) { h.Env = []string{"TRACEPARENT=x"} },
		"twice":            func(h *Handover) { h.Env, h.SecretEnv = []string{"A=1", "A=2"}, nil },
		"value too long": func(h *Handover) {
			h.Env, h.SecretEnv = []string{"A=" + strings.Repeat("x", MaxSessionEnvValue+1)}, nil
		},
		"too many":         func(h *Handover) { h.Env = make([]string, MaxSessionEnv+1) },
		"secret not given": func(h *Handover) { h.SecretEnv = []string{"TOKEN"} },
	} {
		h := sessionHandover()
		change(&h)
		if err := CheckSession(h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A connection carries Handover lines one after another; its end at a line boundary is
// io.EOF alone, a line that is no Handover is ErrMalformedHandover, a line cut short is
// neither.
func TestHandoverReader(t *testing.T) {
	a, _ := EncodeHandover(sessionHandover())
	hr := NewHandoverReader(bytes.NewReader(append(append([]byte{}, a...), a...)))
	for range 2 {
		if h, err := hr.Next(); err != nil || h.DeadlineMs != 5000 {
			t.Fatalf("%+v %v", h, err)
		}
	}
	if _, err := hr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
	for name, tc := range map[string]struct {
		in        string
		malformed bool
	}{
		"cut short": {in: string(a[:len(a)-5])},
		"not json":  {in: "hello\n", malformed: true},
		"unknown":   {in: `{"argsFile":"/etc"}` + "\n", malformed: true},
		"too long":  {in: strings.Repeat("a", MaxHandoverBytes+10) + "\n", malformed: true},
	} {
		_, err := NewHandoverReader(strings.NewReader(tc.in)).Next()
		if !errors.Is(err, ErrNoHandover) || errors.Is(err, ErrMalformedHandover) != tc.malformed {
			t.Errorf("%s: %v", name, err)
		}
	}
}
