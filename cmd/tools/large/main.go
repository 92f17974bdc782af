// Command large returns {"kib": N} KiB of plain text (default 8, at most 4096): 16 lines of
// 64 bytes per KiB, each its number and hex digits of its SHA-256, so that the text does not
// compress well. The runner's frame must fit the 4 KiB termination message even gzipped;
// a result of a few KiB does not, and the operator reads it from the Pod log: this tool
// exercises that path, and output limits (Tool sandbox.maxOutputBytes).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
)

type args struct {
	KiB *int `json:"kib"`
}

func main() { toolio.Main(run) }

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	kib := 8
	if a.KiB != nil {
		kib = *a.KiB
	}
	if kib < 0 || kib > 4096 {
		return nil, fmt.Errorf("kib must be between 0 and 4096, not %d", kib)
	}
	return toolio.Raw(text(kib)), nil
}

// text is kib KiB of numbered 64-byte lines: "000001 <56 hex digits>\n".
func text(kib int) []byte {
	var b bytes.Buffer
	b.Grow(kib << 10)
	for i := 1; i <= kib*16; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		fmt.Fprintf(&b, "%06d %s\n", i, hex.EncodeToString(sum[:])[:56])
	}
	return b.Bytes()
}
