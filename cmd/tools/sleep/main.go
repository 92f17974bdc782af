// Command sleep sleeps {"seconds": N} (0 – 3600, fractions allowed) and returns how long it
// slept: for timeouts (a Tool with a shorter timeout ends it with DeadlineExceeded) and for
// concurrency demos.
package main

import (
	"fmt"
	"time"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
)

type args struct {
	Seconds float64 `json:"seconds"`
}

func main() { toolio.Main(run) }

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Seconds < 0 || a.Seconds > 3600 {
		return nil, fmt.Errorf("seconds must be between 0 and 3600, not %v", a.Seconds)
	}
	start := time.Now()
	time.Sleep(time.Duration(a.Seconds * float64(time.Second)))
	return map[string]any{"slept": time.Since(start).Round(time.Millisecond).Seconds()}, nil
}
