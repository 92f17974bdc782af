// Command oom allocates {"mib": N} MiB (default 512, at most 8192), touching every page,
// so that a memory limit below that gets it OOM-killed: the operator must report the call
// as an isError result (OOMKilled), never hang. If it is not killed it says so.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
)

const mib = 1 << 20

type args struct {
	MiB *int `json:"mib"`
}

func main() { toolio.Main(run) }

// held keeps the allocations reachable so the collector cannot free them.
var held [][]byte

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	n := 512
	if a.MiB != nil {
		n = *a.MiB
	}
	if n < 1 || n > 8192 {
		return nil, fmt.Errorf("mib must be between 1 and 8192, not %d", n)
	}
	for i := 1; i <= n; i++ {
		chunk := make([]byte, mib)
		for j := 0; j < len(chunk); j += 4096 {
			chunk[j] = byte(i)
		}
		held = append(held, chunk)
		if i%16 == 0 {
			fmt.Fprintf(os.Stderr, "oom: %d MiB allocated\n", i)
		}
	}
	time.Sleep(100 * time.Millisecond)
	return toolio.Errorf("allocated %d MiB without being killed: is a memory limit set?", n), nil
}
