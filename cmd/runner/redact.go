package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// redactedMark replaces every form of a credential in the body's output.
const redactedMark = "[REDACTED]"

// credential is one Secret value the body is given (see the package documentation,
// "Credentials"), with the name the runner reports it by: never its value.
type credential struct {
	name  string // the body's variable, or "file <name>"
	value []byte
}

// readCredentials collects the credentials the Pod names: the value of each variable in
// TOOLGATE_SECRET_ENV, and of TOOLGATE_SECRET_FILE_<i> for each file i of
// TOOLGATE_SECRET_FILES. A listed variable that is not set is an error (the operator wrote
// the lists and the kubelet resolves every variable, so the Pod is not what the operator
// built); a value too short to redact is not: checkCredentials reports it as the frame's
// reason. Errors name variables and files, never values.
func readCredentials(lookupEnv func(string) (string, bool)) ([]credential, error) {
	var creds []credential
	var errs []error
	envNames, err := credentialList(lookupEnv, podcontract.EnvSecretEnv)
	errs = append(errs, err)
	for _, name := range envNames {
		v, ok := lookupEnv(name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s names %s, which is not set", podcontract.EnvSecretEnv, name))
			continue
		}
		creds = append(creds, credential{name: name, value: []byte(v)})
	}
	files, err := credentialList(lookupEnv, podcontract.EnvSecretFiles)
	errs = append(errs, err)
	for i, name := range files {
		env := podcontract.EnvSecretFilePrefix + strconv.Itoa(i)
		v, ok := lookupEnv(env)
		if !ok {
			errs = append(errs, fmt.Errorf("%s names %s, but %s is not set", podcontract.EnvSecretFiles, name, env))
			continue
		}
		creds = append(creds, credential{name: "file " + name, value: []byte(v)})
	}
	return creds, errors.Join(errs...)
}

// readRedactions collects the values the signer redacts without the body holding them:
// TOOLGATE_REDACT_<i>, for each i below podcontract.MaxWorkspaceCredentials that is set
// (the credentials a session's workspace may hold, which the kubelet resolves by optional
// references: one whose Secret is gone is simply unset), and TOOLGATE_REDACT_EGRESS_<i>,
// for each i below podcontract.MaxEgressCredentials (the credentials the egress proxy
// injects, which an upstream may echo back to the body). A value shorter than
// frame.MinCredentialBytes once trimmed is left out, not refused: the call's own body was
// not given it, so it is no reason not to run, and its forms would match ordinary output.
func readRedactions(lookupEnv func(string) (string, bool)) []credential {
	var creds []credential
	for _, set := range []struct {
		prefix string
		n      int
	}{{podcontract.EnvRedactPrefix, podcontract.MaxWorkspaceCredentials}, {podcontract.EnvRedactEgressPrefix, podcontract.MaxEgressCredentials}} {
		for i := range set.n {
			name := set.prefix + strconv.Itoa(i)
			v, ok := lookupEnv(name)
			if !ok || len(bytes.TrimSpace([]byte(v))) < frame.MinCredentialBytes {
				continue
			}
			creds = append(creds, credential{name: name, value: []byte(v)})
		}
	}
	return creds
}

// credentialList splits the comma-separated list in variable env (unset or empty: none).
func credentialList(lookupEnv func(string) (string, bool), env string) ([]string, error) {
	v, _ := lookupEnv(env)
	if v == "" {
		return nil, nil
	}
	names := strings.Split(v, ",")
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if names[i] == "" {
			return nil, fmt.Errorf("%s has an empty name at position %d", env, i)
		}
	}
	return names, nil
}

// checkCredentials refuses a credential shorter than frame.MinCredentialBytes once
// trimmed of surrounding white space: its forms would match ordinary output, so that it
// could not be redacted without mangling it. The error names each such credential.
func checkCredentials(creds []credential) error {
	var errs []error
	for _, c := range creds {
		if n := len(bytes.TrimSpace(c.value)); n < frame.MinCredentialBytes {
			errs = append(errs, fmt.Errorf("credential %s is %d bytes; at least %d are needed to redact it", c.name, n, frame.MinCredentialBytes))
		}
	}
	return errors.Join(errs...)
}

// credentialForms returns the byte strings that spell value in the body's output: value
// as is and trimmed of surrounding white space, and each of those in standard and URL-safe
// base64 (padded and not, and the value's cores inside longer base64 data), lowercase and
// uppercase hex, URL query and path escaping, and as the inside of a JSON string
// (encoding/json's escaping, with HTML escaping on and off). Without duplicates, longest
// first.
func credentialForms(value []byte) [][]byte {
	bases := [][]byte{value}
	if t := bytes.TrimSpace(value); len(t) != len(value) && len(t) > 0 {
		bases = append(bases, t)
	}
	var forms [][]byte
	for _, b := range bases {
		s := string(b)
		forms = append(forms, b,
			[]byte(base64.StdEncoding.EncodeToString(b)),
			[]byte(base64.RawStdEncoding.EncodeToString(b)),
			[]byte(base64.URLEncoding.EncodeToString(b)),
			[]byte(base64.RawURLEncoding.EncodeToString(b)),
			[]byte(hex.EncodeToString(b)),
			[]byte(strings.ToUpper(hex.EncodeToString(b))),
			[]byte(url.QueryEscape(s)),
			[]byte(url.PathEscape(s)),
			jsonInside(s, true),
			jsonInside(s, false),
		)
		forms = append(forms, base64Cores(base64.RawStdEncoding, b)...)
		forms = append(forms, base64Cores(base64.RawURLEncoding, b)...)
	}
	return dedupeForms(forms)
}

// base64Cores returns value's cores in enc (unpadded): inside longer data (oauth2:TOKEN,
// user:TOKEN in an Authorization: Basic header) the value's first byte sits at one of
// three offsets in a 3-byte group, and for each the encoding holds a run of characters
// that depends on the value's bytes alone. A value of n bytes at offset a has the
// characters from ⌈8a/6⌉ up to ⌊(8a+8n)/6⌋ of the encoding of a bytes and then the value:
// at least 10 for the shortest value redacted (8 bytes), 60 bits of it. At offset 0 a
// value whose length is a multiple of 3 has for core its whole unpadded encoding.
//
// The character at each end that also carries the neighbours' bits (at most 4 of the
// value's) is no part of the core and stays in the output: it has up to 16 spellings, so
// covering it would take either a pattern instead of fixed strings (a second matcher) or
// holding back the character before every candidate; the at most 8 bits left of at least
// 64 identify nothing.
func base64Cores(enc *base64.Encoding, value []byte) [][]byte {
	cores := make([][]byte, 0, 3)
	for a := range 3 {
		group := make([]byte, a+len(value)) // a filler bytes, then the value
		copy(group[a:], value)
		s := enc.EncodeToString(group)
		cores = append(cores, []byte(s[(8*a+5)/6:(8*a+8*len(value))/6]))
	}
	return cores
}

// jsonInside is s as encoding/json writes it in a string, without the quotes.
func jsonInside(s string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	b := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	return b[1 : len(b)-1]
}

// dedupeForms drops empty and repeated forms and sorts the rest longest first (then
// bytewise, so that the order does not depend on the credentials').
func dedupeForms(forms [][]byte) [][]byte {
	seen := make(map[string]bool, len(forms))
	out := forms[:0]
	for _, f := range forms {
		if len(f) == 0 || seen[string(f)] {
			continue
		}
		seen[string(f)] = true
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b []byte) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(a, b)
	})
	return out
}

// redactionForms returns the forms of every credential, longest first.
func redactionForms(creds []credential) [][]byte {
	var forms [][]byte
	for _, c := range creds {
		forms = append(forms, credentialForms(c.value)...)
	}
	if len(forms) == 0 {
		return nil
	}
	return dedupeForms(forms)
}

// redactOutput wraps the writers of the body's stdout and stderr in redactors of forms,
// so that whatever is kept, counted or passed through is redacted; count reports the
// replacements in both once they are closed. Without forms it returns the writers
// themselves: no credentials cost nothing.
func redactOutput(forms [][]byte, out, errs io.Writer) (outW, errsW io.Writer, count func() int64) {
	if len(forms) == 0 {
		return out, errs, func() int64 { return 0 }
	}
	ro, re := newRedactor(out, forms), newRedactor(errs, forms)
	return ro, re, func() int64 { return ro.count + re.count }
}

// redactError redacts the runner's own error text in f (a command that cannot be started
// is named in it, and the Tool's command may hold a credential the kubelet expanded); these
// replacements are not counted in f.Redactions, which is about the body's output.
func redactError(f frame.Frame, creds []credential) frame.Frame {
	if f.Error == "" || len(creds) == 0 {
		return f
	}
	var buf bytes.Buffer
	r := newRedactor(&buf, redactionForms(creds))
	_, _ = r.Write([]byte(f.Error))
	_ = r.Close()
	f.Error = buf.String()
	return f
}

// form is one byte string to redact, with its first 8 bytes as a number (every form has
// at least frame.MinCredentialBytes = 8) to reject most candidates in one comparison.
type form struct {
	b      []byte
	prefix uint64
}

// redactor is an io.Writer that writes to w what is written to it with every occurrence of
// any of its forms replaced by redactedMark, and counts them. At each position the longest
// form that matches wins; scanning resumes after it. A form split across writes is
// recognised: the bytes from the first position where a form may still start are held
// back until the next write decides (at most the longest form's length less one) and
// written by Close, which must be called at the end of the stream. The work is linear in
// the bytes written: most positions cost one lookup of their first two bytes; the rest
// compare the few forms that start with them, at worst over a form's length.
//
// A redactor is used by one goroutine at a time.
type redactor struct {
	w io.Writer
	// byFirst holds, for each byte, the forms that start with it, longest first.
	byFirst [256][]form
	// pairs is the set of the forms' first two bytes (a 1-byte form: its byte and any):
	// most positions of any output are rejected by one lookup in it.
	pairs   [1 << 16 / 64]uint64
	pending []byte // bytes written and not yet decided
	out     []byte // reused output buffer
	count   int64
}

func newRedactor(w io.Writer, forms [][]byte) *redactor {
	r := &redactor{w: w}
	for _, f := range forms {
		var p uint64
		if len(f) >= 8 {
			p = binary.LittleEndian.Uint64(f)
		}
		r.byFirst[f[0]] = append(r.byFirst[f[0]], form{b: f, prefix: p})
		if len(f) == 1 {
			for c := range 256 {
				r.addPair(f[0], byte(c))
			}
		} else {
			r.addPair(f[0], f[1])
		}
	}
	for _, fs := range r.byFirst {
		slices.SortStableFunc(fs, func(a, b form) int { return len(b.b) - len(a.b) })
	}
	return r
}

func (r *redactor) addPair(a, b byte) {
	k := uint(a)<<8 | uint(b)
	r.pairs[k/64] |= 1 << (k % 64)
}

// Write never reports short writes: it takes all of p, and returns w's error, if any.
func (r *redactor) Write(p []byte) (int, error) {
	r.pending = append(r.pending, p...)
	return len(p), r.scan(false)
}

// Close writes the bytes held back (a form that did not complete is no form). It does not
// close w. The redactor may be written to again after it.
func (r *redactor) Close() error { return r.scan(true) }

// scan redacts pending from its start and writes what is decided; final decides all.
func (r *redactor) scan(final bool) error {
	buf := r.pending
	out := r.out[:0]
	copied, i := 0, 0 // buf[:copied] is in out; buf[:i] is decided
scan:
	for i < len(buf) {
		if i+1 < len(buf) {
			if k := uint(buf[i])<<8 | uint(buf[i+1]); r.pairs[k/64]&(1<<(k%64)) == 0 {
				i++
				continue
			}
		}
		cands := r.byFirst[buf[i]]
		if len(cands) == 0 {
			i++
			continue
		}
		rest := buf[i:]
		var head uint64
		if len(rest) >= 8 {
			head = binary.LittleEndian.Uint64(rest)
		}
		for _, f := range cands {
			switch {
			case len(rest) >= len(f.b):
				if (len(f.b) >= 8 && head != f.prefix) || !bytes.Equal(rest[:len(f.b)], f.b) {
					continue
				}
				out = append(out, buf[copied:i]...)
				out = append(out, redactedMark...)
				r.count++
				i += len(f.b)
				copied = i
				continue scan
			case !final && bytes.HasPrefix(f.b, rest):
				break scan // f may complete with the next write: hold buf[i:] back
			}
		}
		i++
	}
	out = append(out, buf[copied:i]...)
	r.pending = append(r.pending[:0], buf[i:]...)
	r.out = out
	if len(out) == 0 {
		return nil
	}
	_, err := r.w.Write(out)
	return err
}
