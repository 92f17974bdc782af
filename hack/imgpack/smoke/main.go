// Command smoke is the local cluster's smoke-test image (toolgate.local/smoke:dev).
//
//	smoke [result]     write one JSON line to /dev/termination-log and stdout, exit 0
//	smoke sleep DUR    sleep for a Go duration (e.g. 300s), then exit 0
//	smoke probe URL    GET URL with the Pod's service-account token and CA (retrying for
//	                   up to 10 s), write {"url","status","body","ms"} as the termination
//	                   message; exit 1 unless the answer is 200
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

const (
	terminationLog = "/dev/termination-log"
	saDir          = "/var/run/secrets/kubernetes.io/serviceaccount"
)

func main() {
	args := os.Args[1:]
	mode := "result"
	if len(args) > 0 {
		mode, args = args[0], args[1:]
	}
	var err error
	switch {
	case mode == "result":
		err = result()
	case mode == "sleep" && len(args) == 1:
		err = sleep(args[0])
	case mode == "probe" && len(args) == 1:
		err = probe(args[0])
	default:
		err = fmt.Errorf("usage: smoke [result | sleep DUR | probe URL]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "smoke:", err)
		os.Exit(1)
	}
}

// report writes v as one JSON line to stdout and the termination log.
func report(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return os.WriteFile(terminationLog, append(line, '\n'), 0o644)
}

func result() error {
	host, _ := os.Hostname()
	return report(map[string]any{"ok": true, "tool": "smoke", "pod": host, "uid": os.Getuid()})
}

func sleep(arg string) error {
	d, err := time.ParseDuration(arg)
	if err != nil {
		return err
	}
	time.Sleep(d)
	return nil
}

func probe(url string) error {
	client, token, err := inClusterClient()
	if err != nil {
		return err
	}
	start := time.Now()
	var status int
	var body []byte
	for deadline := start.Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status, body, err = get(client, url, token)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	out := map[string]any{"url": url, "status": status, "ms": time.Since(start).Milliseconds()}
	if err != nil {
		out["error"] = err.Error()
	} else {
		out["body"] = json.RawMessage(body)
		if !json.Valid(body) {
			out["body"] = string(body)
		}
	}
	if rerr := report(out); rerr != nil {
		return rerr
	}
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d", status)
	}
	return err
}

func inClusterClient() (*http.Client, string, error) {
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return nil, "", err
	}
	caPEM, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return nil, "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, "", fmt.Errorf("no certificate in %s/ca.crt", saDir)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &http.Client{Transport: tr, Timeout: 3 * time.Second}, string(token), nil
}

func get(client *http.Client, url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return resp.StatusCode, body, err
}
