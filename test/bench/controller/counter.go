package main

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one kind of API request: verb (create, update, patch, delete, get, list,
// watch), API group ("core" for the legacy group), resource and subresource, whether the
// server answered 2xx and, when it did not, the HTTP status (0: no response).
type Request struct {
	Verb, Group, Resource, Subresource string
	OK                                 bool
	Code                               int
}

// String renders the request kind as "verb group/resource[/subresource]".
func (r Request) String() string {
	s := r.Verb + " " + r.Group + "/" + r.Resource
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if !r.OK {
		s += " (failed: " + strconv.Itoa(r.Code) + ")"
	}
	return s
}

// IsWrite reports whether the request changes state.
func (r Request) IsWrite() bool {
	switch r.Verb {
	case "get", "list", "watch", "other":
		return false
	}
	return true
}

// Counter counts the HTTP requests of one rest.Config (installed with rest.Config.Wrap):
// by kind, and the ToolCall status writes per call (the call's name is in the URL).
type Counter struct {
	mu          sync.Mutex
	counts      map[Request]int
	spent       map[Request]time.Duration
	statusByObj map[string]int
	// byPhase counts ToolCall status writes by the phase they write and their outcome.
	byPhase map[string]int
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{counts: map[Request]int{}, spent: map[Request]time.Duration{},
		statusByObj: map[string]int{}, byPhase: map[string]int{}}
}

// Wrap is a transport.WrapperFunc: every request through the returned RoundTripper is counted.
func (c *Counter) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(req)
		code := 0
		if err == nil {
			code = resp.StatusCode
		}
		c.record(req, code, time.Since(start))
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// record counts a request answered with code; d is the time to the response headers (for
// a watch: until the stream opened).
func (c *Counter) record(req *http.Request, code int, d time.Duration) {
	r, name := classify(req)
	if r.OK = code >= 200 && code < 300; !r.OK {
		r.Code = code
	}
	statusWrite := r.Resource == "toolcalls" && r.Subresource == "status" && r.IsWrite()
	phase := ""
	if statusWrite {
		phase = writtenPhase(req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[r]++
	c.spent[r] += d
	if statusWrite {
		outcome := "ok"
		if !r.OK {
			outcome = "failed: " + strconv.Itoa(r.Code)
		}
		c.byPhase["phase "+phase+" ("+outcome+")"]++
		if r.OK {
			c.statusByObj[name]++
		}
	}
}

// writtenPhase reads status.phase from a JSON request body (a copy, via GetBody).
func writtenPhase(req *http.Request) string {
	if req.GetBody == nil {
		return "?"
	}
	body, err := req.GetBody()
	if err != nil {
		return "?"
	}
	defer func() { _ = body.Close() }()
	var obj struct {
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := json.NewDecoder(body).Decode(&obj); err != nil {
		return "?"
	}
	return obj.Status.Phase
}

// classify parses a Kubernetes API path: /api/v1/... or /apis/<group>/<version>/...,
// then [namespaces/<ns>/]<resource>[/<name>[/<subresource>]].
func classify(req *http.Request) (Request, string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var rest []string
	r := Request{Verb: "other", Group: "-", Resource: "(non-resource)"}
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.Group, rest = "core", parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.Group, rest = parts[1], parts[3:]
	default:
		return r, ""
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	name := ""
	r.Resource = rest[0]
	if len(rest) > 1 {
		name = rest[1]
	}
	if len(rest) > 2 {
		r.Subresource = strings.Join(rest[2:], "/")
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			r.Verb = "watch"
		case name == "":
			r.Verb = "list"
		default:
			r.Verb = "get"
		}
	case http.MethodPost:
		r.Verb = "create"
	case http.MethodPut:
		r.Verb = "update"
	case http.MethodPatch:
		r.Verb = "patch"
	case http.MethodDelete:
		r.Verb = "delete"
		if name == "" {
			r.Verb = "deletecollection"
		}
	}
	return r, name
}

// Counts is a snapshot of a Counter.
type Counts struct {
	ByKind   map[Request]int
	Spent    map[Request]time.Duration
	PerCall  map[string]int
	ByPhase  map[string]int
	Requests int
}

// Snapshot copies the current counts.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Counts{ByKind: map[Request]int{}, Spent: map[Request]time.Duration{}, PerCall: map[string]int{}, ByPhase: map[string]int{}}
	for k, v := range c.byPhase {
		s.ByPhase[k] = v
	}
	for k, v := range c.counts {
		s.ByKind[k], s.Spent[k] = v, c.spent[k]
		s.Requests += v
	}
	for k, v := range c.statusByObj {
		s.PerCall[k] = v
	}
	return s
}

// Sub returns the counts made since base.
func (s Counts) Sub(base Counts) Counts {
	d := Counts{ByKind: map[Request]int{}, Spent: map[Request]time.Duration{}, PerCall: map[string]int{}, ByPhase: map[string]int{}}
	for k, v := range s.ByPhase {
		if n := v - base.ByPhase[k]; n != 0 {
			d.ByPhase[k] = n
		}
	}
	for k, v := range s.ByKind {
		if n := v - base.ByKind[k]; n != 0 {
			d.ByKind[k], d.Spent[k] = n, s.Spent[k]-base.Spent[k]
			d.Requests += n
		}
	}
	for k, v := range s.PerCall {
		if n := v - base.PerCall[k]; n != 0 {
			d.PerCall[k] = n
		}
	}
	return d
}

// Sum adds the counts of the kinds that match.
func (s Counts) Sum(match func(Request) bool) int {
	n := 0
	for k, v := range s.ByKind {
		if match(k) {
			n += v
		}
	}
	return n
}

// Lines lists the kinds that match with their counts and mean latencies, sorted by kind.
func (s Counts) Lines(match func(Request) bool) []KindCount {
	var out []KindCount
	for k, v := range s.ByKind {
		if match(k) {
			mean := float64(s.Spent[k].Microseconds()) / 1000 / float64(v)
			out = append(out, KindCount{Kind: k.String(), Count: v, MeanMs: mean})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// KindCount is one line of a request breakdown.
type KindCount struct {
	Kind   string  `json:"kind"`
	Count  int     `json:"count"`
	MeanMs float64 `json:"meanMs,omitempty"`
}
