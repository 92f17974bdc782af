// Command fetch makes one HTTP(S) GET, for end-to-end checks of sandbox.network and the
// egress proxy: through the proxy the Pod's HTTPS_PROXY / HTTP_PROXY name (Go's
// ProxyFromEnvironment), or with {"direct": true} straight to the destination, as a body
// that ignores the proxy would. {"url" or "urls" (up to 8, one after the other), "direct",
// "ca" (PEM to trust besides the system's), "timeoutSeconds" (default 5, per request),
// "repeat" (2 to 500: GET url that many times, one after the other, as fast as answers come),
// and, to play a body that tries to get around the proxy's checks: "serverName" (the TLS
// name to send instead of the URL's host), "host" (the Host header instead of the URL's),
// "proxy" (a proxy URL instead of the Pod's, another call's grant say), and "env" (true: the
// result's "env" lists the tool's environment, NAME=value, to show what the body holds)}.
// The result is always an object, {"results": [...]} for urls (and "env"), {"tally": {"403": n, "429": m,
// "error": k}} for a repeat: the status and the first bytes of the body, or the error; never
// isError, so a test reads what happened.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
)

const maxBody = 1024

const maxURLs = 8

const maxRepeat = 500

type args struct {
	URL            string   `json:"url"`
	URLs           []string `json:"urls"`
	Direct         bool     `json:"direct"`
	CA             string   `json:"ca"`
	TimeoutSeconds int      `json:"timeoutSeconds"`
	Repeat         int      `json:"repeat"`
	ServerName     string   `json:"serverName"`
	Host           string   `json:"host"`
	Proxy          string   `json:"proxy"`
	Env            bool     `json:"env"`
}

type result struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	Error  string `json:"error,omitempty"`
}

func main() { toolio.Main(run) }

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	if (a.URL == "") == (len(a.URLs) == 0) || len(a.URLs) > maxURLs {
		return nil, fmt.Errorf("give url or urls (1 to %d)", maxURLs)
	}
	client, err := newClient(a)
	if err != nil {
		return nil, err
	}
	if a.Repeat != 0 {
		if a.URL == "" || a.Repeat < 2 || a.Repeat > maxRepeat {
			return nil, fmt.Errorf("repeat: give url and 2 to %d", maxRepeat)
		}
		return repeat(client, a.URL, a.Host, a.Repeat), nil
	}
	if a.URL != "" {
		return get(client, a.URL, a.Host), nil
	}
	out := struct {
		Results []result `json:"results"`
		Env     []string `json:"env,omitempty"`
	}{}
	for _, u := range a.URLs {
		out.Results = append(out.Results, get(client, u, a.Host))
	}
	if a.Env {
		out.Env = os.Environ()
	}
	return out, nil
}

func newClient(a args) (*http.Client, error) {
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{ServerName: a.ServerName, MinVersion: tls.VersionTLS12}}
	if a.Proxy != "" {
		u, err := url.Parse(a.Proxy)
		if err != nil {
			return nil, errors.New("proxy: not a URL")
		}
		tr.Proxy = http.ProxyURL(u)
	}
	if a.Direct {
		tr.Proxy = nil
	}
	if a.CA != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(a.CA)) {
			return nil, errors.New("ca: no PEM certificate")
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	timeout := time.Duration(a.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// get GETs url, with host as the Host header when set.
func get(c *http.Client, url, host string) result {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return result{Error: err.Error()}
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{Error: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	r := result{OK: resp.StatusCode/100 == 2, Status: resp.StatusCode, Body: string(b)}
	if err != nil {
		r.Error = fmt.Sprintf("reading the body: %v", err)
	}
	return r
}

// repeat GETs url n times and counts the answers by status code ("error" when there was
// none).
func repeat(c *http.Client, url, host string, n int) any {
	tally := map[string]int{}
	for range n {
		r := get(c, url, host)
		key := "error"
		if r.Status != 0 {
			key = strconv.Itoa(r.Status)
		}
		tally[key]++
	}
	return struct {
		Tally map[string]int `json:"tally"`
	}{tally}
}
