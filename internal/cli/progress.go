package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// progress shows a call's walk through the pipeline while `call --wait` waits: one line
// per stage. On a terminal the current stage's line is live — rewritten with the time
// spent in it — and finished when the next stage begins; elsewhere each stage is one plain
// line written when it begins.
type progress struct {
	w    io.Writer
	live bool
	now  func() time.Time
	// hint is printed once, on its own line, when the call starts waiting for approval.
	hint string

	mu     sync.Mutex
	start  time.Time
	cur    stage
	begun  time.Time
	open   bool
	hinted bool
	// drawn is the width of the live line as last drawn.
	drawn int
}

func newProgress(w io.Writer, live bool, hint string) *progress {
	p := &progress{w: w, live: live, now: time.Now, hint: hint}
	p.start = p.now()
	return p
}

// observe is given every version of the call the wait sees.
func (p *progress) observe(call *v1alpha1.ToolCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := stageOf(call), p.now()
	if s.Key == p.cur.Key {
		p.cur = s
		p.redraw(now)
		return
	}
	p.endLine(now)
	p.cur, p.begun = s, now
	live := p.live && !call.Status.Phase.IsTerminal()
	if !live {
		fprintf(p.w, "%s\n", formatStage(s, now.Sub(p.start)))
	}
	if s.Name == string(v1alpha1.PhaseAwaitingApproval) && !p.hinted && p.hint != "" {
		p.hinted = true
		fprintf(p.w, "%s\n", p.hint)
	}
	if live {
		p.open = true
		p.redraw(now)
	}
}

// run rewrites the live line every interval until ctx ends.
func (p *progress) run(ctx context.Context, interval time.Duration) {
	if !p.live {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw(p.now())
			p.mu.Unlock()
		}
	}
}

// finish ends the live line, if one is open.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLine(p.now())
}

// redraw rewrites the live line: a carriage return, the line, and blanks over what is left
// of a longer line drawn before. No escape sequence: the CLI writes none of its own, so
// a terminal that receives ESC from toolgate has a bug to report.
func (p *progress) redraw(now time.Time) {
	if p.live && p.open {
		line := liveLine(p.cur, p.begun.Sub(p.start), now.Sub(p.begun))
		width := utf8.RuneCountInString(line)
		fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(p.drawn-width, 0)))
		p.drawn = width
	}
}

func (p *progress) endLine(now time.Time) {
	if p.live && p.open {
		p.redraw(now)
		fprintf(p.w, "\n")
		p.open, p.drawn = false, 0
	}
}

// liveLine is a stage line with the time spent in the stage so far.
func liveLine(s stage, at, spent time.Duration) string {
	return fmt.Sprintf("%s (%s)", formatStage(s, at), formatSeconds(spent))
}

// isTerminal reports whether w is a terminal (live progress, prompts).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
