package frame

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestHandoverRoundTrip(t *testing.T) {
	in := Handover{Arguments: []byte(`{"a":"$(x)\n"}`), ArgumentsDigest: DigestOf([]byte(`{"a":"$(x)\n"}`)), Traceparent: "00-abc-def-01"}
	line, err := EncodeHandover(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ReadHandover(bytes.NewReader(append(line, []byte("ignored after the line")...)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Arguments, in.Arguments) || out.ArgumentsDigest != in.ArgumentsDigest || out.Traceparent != in.Traceparent {
		t.Fatalf("got %+v, want %+v", out, in)
	}
}

func TestReadHandoverRefuses(t *testing.T) {
	for name, input := range map[string]string{
		"empty":         "",
		"no newline":    `{"arguments":"e30=","argumentsDigest":"x"}`,
		"unknown field": `{"arguments":"e30=","argumentsDigest":"x","argsFile":"/etc"}` + "\n",
		"not json":      "hello\n",
		"too long":      strings.Repeat("a", MaxHandoverBytes+10) + "\n",
	} {
		if _, err := ReadHandover(strings.NewReader(input)); !errors.Is(err, ErrNoHandover) {
			t.Errorf("%s: err = %v, want ErrNoHandover", name, err)
		}
	}
}

func TestLastResultLine(t *testing.T) {
	out := append([]byte("noise\n--toolgate-warm-result Zm9yZ2Vk\n"), ResultLine([]byte("tgs1:real"))...)
	msg, ok := LastResultLine(out)
	if !ok || msg != "tgs1:real" {
		t.Fatalf("got %q %v", msg, ok)
	}
	if _, ok := LastResultLine([]byte("--toolgate-warm-result Zm9y")); ok {
		t.Fatal("an unterminated line must not count")
	}
	if _, ok := LastResultLine(ResultLine(bytes.Repeat([]byte("x"), MaxTerminationMessage+1))); ok {
		t.Fatal("a line longer than a termination message must not count")
	}
}
