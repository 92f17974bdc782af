package console

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/display"
)

// page is what every template sees.
type page struct {
	Title string
	// User is the signed-in identity; CSRF its session's token.
	User, CSRF string
	// Events is the Server-Sent Events URL that tells the page to refresh its live part;
	// Path the page's own address (a POST's answer shows the page of another path).
	Events, Path string
	Flash        *flash
	Login        *loginView
	// Pending is the list page's, Call the call page's.
	Pending *pendingView
	Call    *callView
}

type flash struct {
	Error bool
	Text  string
}

type loginView struct {
	Token bool
	Error string
}

type pendingView struct {
	Cards []card
	Where visible
}

// funcs are the templates' helpers: dict passes a part several values; line, text and
// whole show what a caller or tool wrote (shownHTML), in element content only.
var funcs = template.FuncMap{
	"dict":  dict,
	"line":  func(s string) template.HTML { return shownHTML(lineOpts, s) },
	"text":  func(s string) template.HTML { return shownHTML(textOpts, s) },
	"whole": func(s string) template.HTML { return shownHTML(wholeOpts, s) },
}

var (
	// lineOpts: a one-line field (a newline in it is escaped).
	lineOpts = display.Options{MaxLine: display.DefaultMaxLine}
	// textOpts: multi-line text in a <pre> (a result's content).
	textOpts = display.Options{Multiline: true, MaxLine: display.DefaultMaxLine}
	// wholeOpts: one line, never cut: the canonical arguments an approver answers for.
	wholeOpts = display.Options{}
)

// shownHTML is s as display shows it, HTML-escaped, each escape (\x1b, \u202e, a cut
// marker) in a <span class="esc"> that the style sheet makes stand out. html/template
// escapes <, > and &, not what a browser draws invisibly or reorders (bidi controls,
// zero-width characters): this does.
func shownHTML(o display.Options, s string) template.HTML {
	var b strings.Builder
	for p := range o.Pieces(s) {
		if p.Escape {
			b.WriteString(`<span class="esc">`)
			template.HTMLEscape(&b, []byte(p.Text))
			b.WriteString(`</span>`)
			continue
		}
		template.HTMLEscape(&b, []byte(p.Text))
	}
	return template.HTML(b.String()) //nolint:gosec // every piece of s is HTML-escaped above
}

func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("dict: an odd number of arguments")
	}
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, errors.New("dict: a key that is not a string")
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// parsePages parses each page with the layout and the shared parts.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"login", "pending", "call"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/parts.html", "assets/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes the page name: the whole document, or with ?fragment=1 only its live part
// (what the script swaps in on an event).
func (s *Server) render(w http.ResponseWriter, status int, name string, p page) {
	s.renderPart(w, status, name, "layout", p)
}

func (s *Server) renderPart(w http.ResponseWriter, status int, name, part string, p page) {
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, part, p); err != nil {
		s.opts.Logger.Error(err, "Rendering a page", "page", name)
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if r.URL.Query().Get("fragment") != "" {
		s.renderPart(w, status, name, "live", p)
		return
	}
	s.render(w, status, name, p)
}

func (s *Server) pendingPage(w http.ResponseWriter, r *http.Request, req *request) {
	calls, where, err := s.listCalls(r.Context(), req.user)
	p := page{Title: "Awaiting approval", User: req.ac.Identity, CSRF: req.csrf, Events: "/events", Path: "/"}
	if err != nil {
		p.Flash = &flash{Error: true, Text: "listing calls: " + err.Error()}
	}
	view := &pendingView{Where: where}
	now := time.Now()
	pending := awaiting(calls)
	for i := range pending {
		view.Cards = append(view.Cards, newCard(&pending[i], req.ac.Identity, now))
	}
	p.Pending = view
	s.serve(w, r, http.StatusOK, "pending", p)
}

func (s *Server) callPage(w http.ResponseWriter, r *http.Request, req *request) {
	s.showCall(w, r, req, http.StatusOK, nil)
}

// showCall renders the call page, with flash on top.
func (s *Server) showCall(w http.ResponseWriter, r *http.Request, req *request, status int, f *flash) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	p := page{Title: ns + "/" + name, User: req.ac.Identity, CSRF: req.csrf, Flash: f,
		Events: "/events?" + url.Values{"namespace": {ns}, "call": {name}}.Encode(),
		Path:   "/calls/" + url.PathEscape(ns) + "/" + url.PathEscape(name)}
	c := inNamespace(req.ac, ns)
	// Read first for the status code: the describer's errors are for people.
	_, err := c.Get(r.Context(), name)
	var v *CallView
	if err == nil {
		v, err = s.opts.Describe(r.Context(), c, req.kube, name)
	}
	if err != nil {
		code := http.StatusBadGateway
		switch {
		case apierrors.IsNotFound(err):
			code = http.StatusNotFound
		case apierrors.IsForbidden(err):
			code = http.StatusForbidden
		}
		if f != nil {
			code = status
		}
		p.Flash = &flash{Error: true, Text: strings.TrimSpace(flashText(f) + " " + err.Error())}
		s.serve(w, r, code, "call", p)
		return
	}
	p.Call = newCallView(v, req.ac.Identity, time.Now())
	s.serve(w, r, status, "call", p)
}

// decide answers a call through the CLI's approve / deny path, for the call the user was
// shown: its uid and arguments digest come with the form, and a call that changed since is
// not answered.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, req *request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	decision := v1alpha1.ApprovalDecision(r.PostFormValue("decision"))
	if decision != v1alpha1.DecisionApprove && decision != v1alpha1.DecisionDeny {
		s.showCall(w, r, req, http.StatusBadRequest, &flash{Error: true, Text: "the decision must be Approve or Deny"})
		return
	}
	c := inNamespace(req.ac, ns)
	call, err := c.Get(r.Context(), name)
	if err != nil {
		s.showCall(w, r, req, http.StatusBadGateway, &flash{Error: true, Text: "reading the call: " + err.Error()})
		return
	}
	if string(call.UID) != r.PostFormValue("uid") || call.Status.ArgumentsDigest != r.PostFormValue("digest") {
		s.showCall(w, r, req, http.StatusConflict, &flash{Error: true, Text: "the call is not the one you were shown " +
			"(it was created again, or its arguments digest changed): look at it again before answering"})
		return
	}
	if err := s.opts.Decide(r.Context(), c, call, decision, r.PostFormValue("reason")); err != nil {
		s.showCall(w, r, req, statusOf(err), &flash{Error: true, Text: err.Error()})
		return
	}
	done := "Approved"
	if decision == v1alpha1.DecisionDeny {
		done = "Denied"
	}
	s.showCall(w, r, req, http.StatusOK, &flash{Text: done + " call " + ns + "/" + name + " as " + c.Identity + "."})
}

func flashText(f *flash) string {
	if f == nil {
		return ""
	}
	return f.Text
}

// Forbidden marks a Decider's error as a refusal of who answers (RBAC, the admission
// policy, a self-approval): 403. Any other error is about the call (not awaiting an
// answer, answered already): 409.
type Forbidden struct{ Err error }

func (f Forbidden) Error() string { return f.Err.Error() }
func (f Forbidden) Unwrap() error { return f.Err }

func statusOf(err error) int {
	var forbidden Forbidden
	if errors.As(err, &forbidden) || apierrors.IsForbidden(err) {
		return http.StatusForbidden
	}
	return http.StatusConflict
}

// inNamespace is c acting in namespace ns.
func inNamespace(c *agentclient.Client, ns string) *agentclient.Client {
	cc := *c
	cc.Namespace = ns
	return &cc
}
