package main

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestFetchTrustsGivenCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hi")) }))
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	got, err := run([]byte(`{"url":"` + srv.URL + `","direct":true,"ca":` + quote(ca) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(result); !r.OK || r.Status != 200 || r.Body != "hi" {
		t.Errorf("with the CA: %+v", r)
	}
	got, _ = run([]byte(`{"url":"` + srv.URL + `","direct":true}`))
	if r := got.(result); r.OK || !strings.Contains(r.Error, "certificate") {
		t.Errorf("without the CA: %+v, want a certificate error", r)
	}
}

func TestFetchNeedsURL(t *testing.T) {
	if _, err := run([]byte(`{}`)); err == nil {
		t.Error("no url: no error")
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestFetchURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.URL.Path)) }))
	defer srv.Close()
	got, err := run([]byte(`{"urls":["` + srv.URL + `/a","` + srv.URL + `/b"],"direct":true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"body":"/a"`) || !strings.Contains(string(b), `"body":"/b"`) {
		t.Errorf("results %s", b)
	}
	if _, err := run([]byte(`{"url":"x","urls":["y"]}`)); err == nil {
		t.Error("url and urls: no error")
	}
}

func TestFetchRepeatTallies(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) > 3 {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	got, err := run([]byte(`{"url":"` + srv.URL + `","direct":true,"repeat":5}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if string(b) != `{"tally":{"200":3,"429":2}}` {
		t.Errorf("tally %s", b)
	}
	for _, bad := range []string{`{"urls":["x"],"repeat":2}`, `{"url":"x","repeat":1}`, `{"url":"x","repeat":501}`} {
		if _, err := run([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// serverName and host replace the URL's host in the TLS name and the Host header: the test
// listener's certificate names example.com, the URL an address.
func TestFetchServerNameAndHost(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.Host)) }))
	defer srv.Close()
	ca := quote(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	got, err := run([]byte(`{"url":"` + srv.URL + `","direct":true,"ca":` + ca + `,"serverName":"example.com","host":"other.test"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(result); !r.OK || r.Body != "other.test" {
		t.Errorf("serverName example.com, host other.test: %+v", r)
	}
	got, _ = run([]byte(`{"url":"` + srv.URL + `","direct":true,"ca":` + ca + `,"serverName":"other.test"}`))
	if r := got.(result); r.OK || !strings.Contains(r.Error, "certificate") {
		t.Errorf("serverName other.test: %+v, want a certificate error (the name was sent)", r)
	}
}

// proxy replaces the Pod's proxy.
func TestFetchProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("proxied " + r.URL.String()))
	}))
	defer proxy.Close()
	got, err := run([]byte(`{"url":"http://allowed.test/x","proxy":"` + proxy.URL + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(result); r.Body != "proxied http://allowed.test/x" {
		t.Errorf("through the given proxy: %+v", r)
	}
	if _, err := run([]byte(`{"url":"http://x/","proxy":"::"}`)); err == nil {
		t.Error("a proxy that is no URL: no error")
	}
}
