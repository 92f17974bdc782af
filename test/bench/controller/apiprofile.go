package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// startAPIServerProfile asks kube-apiserver for a CPU profile of the next seconds
// (/debug/pprof/profile, served while --profiling is on, its default) and writes it to
// path; the result waits for it. Nothing happens when path is empty.
func startAPIServerProfile(ctx context.Context, cfg *rest.Config, path string, seconds int) (wait func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	hc.Timeout = time.Duration(seconds+60) * time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fetchProfile(hc, req, path); err != nil {
			progress("kube-apiserver profile: " + err.Error())
			return
		}
		progress("kube-apiserver profile written to " + path)
	}()
	return func() { <-done }, nil
}

func fetchProfile(hc *http.Client, req *http.Request, path string) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
