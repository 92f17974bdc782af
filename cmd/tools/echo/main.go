// Command echo returns its arguments object unchanged (the canonical bytes the operator
// froze). Example tool: concurrency-safe and read-only.
package main

import (
	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
)

func main() { toolio.Main(run) }

func run(args []byte) (any, error) {
	var obj map[string]any
	if err := toolio.Decode(args, &obj); err != nil {
		return nil, err
	}
	return toolio.Raw(args), nil
}
