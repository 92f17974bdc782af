package cli

import (
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// runtimeLog is where controller-runtime's own log goes (its clients' warnings): the
// standard error of the command running. controller-runtime takes a logger once per
// process, and without one it prints a stack trace of some 25 lines to stderr once the
// process is 30 s old and anything logs through it (the gateway's first client for a new
// user, say): so every command sets it, and a later command only moves where it writes.
var runtimeLog struct {
	once sync.Once
	mu   sync.Mutex
	out  io.Writer
}

// logRuntimeTo sends controller-runtime's log to w, at its default verbosity.
func logRuntimeTo(w io.Writer) {
	runtimeLog.mu.Lock()
	runtimeLog.out = w
	runtimeLog.mu.Unlock()
	runtimeLog.once.Do(func() {
		ctrllog.SetLogger(funcr.New(func(prefix, args string) {
			runtimeLog.mu.Lock()
			defer runtimeLog.mu.Unlock()
			fprintf(runtimeLog.out, "%s %s: %s\n", time.Now().Format(time.RFC3339), prefix, args)
		}, funcr.Options{}).WithName("controller-runtime"))
	})
}
