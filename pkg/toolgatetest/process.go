/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package toolgatetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// An operator run as a process of its own (the chaos harness, bench-controller's
// -operator-process) reaches envtest through WriteKubeconfig and the simulated Kubelet's Pod
// logs, which stand in for pods/log, through ServeLogs and LogsClient; its session Pods, in
// place of the mutual-TLS transport, through the same server and SessionClient.

// WriteKubeconfig writes cfg (envtest's admin: client certificate, token, CA data) as a
// kubeconfig at path.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// LogReader reads the end of a container's log, bounded, as the operator does for a result
// too large for the termination message. The Kubelet and LogsClient are LogReaders, and
// the operator takes either as its log reader.
type LogReader interface {
	TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error)
}

// ServeLogs serves r's Pod logs on a loopback port (GET /log, the bounds of
// LogReader.TailLog as query parameters) and returns its base URL for LogsClient and a
// function that stops it. When r is a Kubelet it also serves its session Pods (POST
// /session) for SessionClient.
func ServeLogs(r LogReader) (base string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		tail, err1 := strconv.ParseInt(q.Get("tailLines"), 10, 64)
		limit, err2 := strconv.ParseInt(q.Get("limitBytes"), 10, 64)
		if err1 != nil || err2 != nil {
			http.Error(w, "tailLines and limitBytes must be numbers", http.StatusBadRequest)
			return
		}
		data, err := r.TailLog(req.Context(), q.Get("namespace"), q.Get("pod"), q.Get("container"), tail, limit)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	if k, ok := r.(*Kubelet); ok {
		mux.HandleFunc("POST /session", k.serveSession) // process_session.go
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv.Close, nil
}

// LogsClient is a LogReader that reads from a ServeLogs server at Base: an operator run as a
// process of its own reads the simulated Pod logs with it.
type LogsClient struct{ Base string }

// TailLog asks the server for the log with the same bounds and never returns more than
// limitBytes.
func (h LogsClient) TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error) {
	q := url.Values{"namespace": {namespace}, "pod": {pod}, "container": {container},
		"tailLines": {strconv.FormatInt(tailLines, 10)}, "limitBytes": {strconv.FormatInt(limitBytes, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base+"/log?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max(limitBytes, 0)+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("log server: %s: %s", resp.Status, body)
	}
	if int64(len(body)) > limitBytes {
		body = body[:limitBytes]
	}
	return body, nil
}
