package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// heartbeat keeps an idle event stream open through proxies.
const heartbeat = 25 * time.Second

// change is one event of the stream: a call changed.
type change struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
}

// events streams Server-Sent Events: "change" whenever a watched call changes (one call
// with ?namespace=&call=, else the calls the list page shows), as the user (their own
// watch, so RBAC decides what they hear of). The stream ends when a watch does; the
// browser reconnects (retry) and the page refreshes once it has.
func (s *Server) events(w http.ResponseWriter, r *http.Request, req *request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	watches, err := s.openWatches(ctx, r, req.user)
	if err != nil {
		http.Error(w, "watching calls: "+err.Error(), http.StatusBadGateway)
		return
	}
	changes, ended := merge(ctx, watches)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n: watching\n\n")
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
		case <-ended:
			return
		case c := <-changes:
			data, _ := json.Marshal(c) // strings only
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", data)
		}
		flusher.Flush()
	}
}

// openWatches watches one call (namespace and call given), else what listCalls shows.
func (s *Server) openWatches(ctx context.Context, r *http.Request, u *user) ([]watch.Interface, error) {
	ns, name := r.URL.Query().Get("namespace"), r.URL.Query().Get("call")
	if name != "" {
		w, err := u.ac.C.Watch(ctx, &v1alpha1.ToolCallList{}, client.InNamespace(ns),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
		if err != nil {
			return nil, err
		}
		return []watch.Interface{w}, nil
	}
	_, where, err := s.listCalls(ctx, u)
	if err != nil {
		return nil, err
	}
	namespaces := where.Namespaces
	if where.All {
		namespaces = []string{""}
	}
	var out []watch.Interface
	for _, ns := range namespaces {
		var opts []client.ListOption
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		w, err := u.ac.C.Watch(ctx, &v1alpha1.ToolCallList{}, opts...)
		if err != nil {
			for _, o := range out {
				o.Stop()
			}
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// merge is the calls the watches report; ended closes when any watch ends. Every watch
// stops when ctx ends.
func merge(ctx context.Context, watches []watch.Interface) (changes <-chan change, ended <-chan struct{}) {
	out := make(chan change)
	var once sync.Once
	done := make(chan struct{})
	for _, w := range watches {
		go func() {
			defer w.Stop()
			defer once.Do(func() { close(done) })
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					call, isCall := ev.Object.(*v1alpha1.ToolCall)
					if !isCall {
						continue // a watch error or bookmark
					}
					select {
					case out <- change{Namespace: call.Namespace, Name: call.Name, Phase: phaseOf(call)}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	return out, done
}
