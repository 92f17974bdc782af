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
