package main

import (
	"bytes"
	"testing"
)

func TestTextSize(t *testing.T) {
	for _, kib := range []int{0, 1, 5, 64} {
		got := text(kib)
		if len(got) != kib<<10 || bytes.Count(got, []byte("\n")) != kib*16 {
			t.Fatalf("kib %d: %d bytes", kib, len(got))
		}
	}
}
