// Package browser starts headless Chromium for the suites that test the approval console
// in a real browser (chromedp), and saves screenshots for the docs.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/chromedp/chromedp"
)

// Chromium is Debian's package (apt-get install -y chromium); CHROMIUM overrides the path.
func Chromium() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found: install Debian's chromium package (apt-get install -y chromium), or set CHROMIUM")
}

// New starts a headless Chromium with a 1000×1000 window and returns a context for its one
// tab; cancel stops the browser. It runs without Chromium's sandbox, because the suites run
// as root here (CI and this machine) and Chromium refuses to start sandboxed as root; the
// pages it opens are the console's own, from this process, so the sandbox protects nothing
// a test would need. Never run a browser for anything else this way.
func New(parent context.Context) (context.Context, context.CancelFunc, error) {
	path, err := Chromium()
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.WindowSize(1000, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	// The first action starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return ctx, func() { cancelTab(); cancelAlloc() }, nil
}

// Screenshot writes the tab's viewport as PNG to path, creating its directory.
func Screenshot(ctx context.Context, path string) ([]byte, error) {
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return png, os.WriteFile(path, png, 0o644)
}

// The console swaps its live part in whenever its event stream reports a change, so a
// node found by one protocol call may be gone by the next (chromedp's Text or Click query
// the node, then act on it). These act in one evaluation in the page instead.

// TextOf is the textContent of the first element matching the CSS selector, read in one
// evaluation; an error when there is none.
func TextOf(selector string) chromedp.Action[string] {
	return chromedp.Evaluate[string](fmt.Sprintf(`(() => {
  const el = document.querySelector(%s);
  if (!el) { throw new Error('no element ' + %[1]s); }
  return el.textContent.trim();
})()`, strconv.Quote(selector)))
}

// ClickOn clicks the first element matching the CSS selector, found and clicked in one
// evaluation. Wrap it in chromedp.RunResponse when the click navigates.
func ClickOn(selector string) chromedp.Action[chromedp.Void] {
	return jsVoid(fmt.Sprintf(`document.querySelector(%s).click()`, strconv.Quote(selector)))
}

// Fill sets the value of the first element matching the CSS selector (an input or
// textarea), as typing would, in one evaluation.
func Fill(selector, value string) chromedp.Action[chromedp.Void] {
	return jsVoid(fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s; el.focus(); })()`,
		strconv.Quote(selector), strconv.Quote(value)))
}

// jsVoid evaluates expr for its effect.
func jsVoid(expr string) chromedp.Action[chromedp.Void] {
	eval := chromedp.Evaluate[bool]("(" + expr + ", true)")
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := eval(ctx, t)
		return chromedp.Void{}, err
	}
}
