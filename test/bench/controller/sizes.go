package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Storage is what the calls cost the API server's storage.
type Storage struct {
	// ObjectBytes is the size of a finished call as the API server returns it (a GET's JSON,
	// managedFields included): custom resources are stored in etcd as this JSON.
	ObjectBytes Sizes `json:"toolCallObjectBytes"`
	// EtcdDBBefore/After are etcd's database size (etcd_mvcc_db_total_size_in_bytes) and the
	// part in use (…_in_use_in_bytes) before the first create and after the run: they include
	// the Jobs, Pods and events of the run and every revision not compacted yet.
	EtcdDBBefore      int64 `json:"etcdDbBytesBefore"`
	EtcdDBAfter       int64 `json:"etcdDbBytesAfter"`
	EtcdInUseBefore   int64 `json:"etcdDbInUseBytesBefore"`
	EtcdInUseAfter    int64 `json:"etcdDbInUseBytesAfter"`
	EtcdKeysAfter     int64 `json:"etcdKeysAfter"`
	ResultBytesPerCal int   `json:"resultBytes"`
}

// Sizes summarises sampled object sizes.
type Sizes struct {
	N    int `json:"n"`
	Min  int `json:"min"`
	Mean int `json:"mean"`
	Max  int `json:"max"`
}

// objectSizes GETs up to sample calls by name and measures their JSON.
func objectSizes(ctx context.Context, cfg *rest.Config, ns string, names []string, sample int) (Sizes, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Sizes{}, err
	}
	var s Sizes
	total := 0
	step := max(1, len(names)/max(1, sample))
	for i := 0; i < len(names) && s.N < sample; i += step {
		u := fmt.Sprintf("%s/apis/toolgate.dev/v1alpha1/namespaces/%s/toolcalls/%s", strings.TrimSuffix(cfg.Host, "/"), ns, names[i])
		n, err := getBytes(ctx, hc, u)
		if err != nil {
			return s, err
		}
		if s.N == 0 || n < s.Min {
			s.Min = n
		}
		s.Max = max(s.Max, n)
		total += n
		s.N++
	}
	if s.N > 0 {
		s.Mean = total / s.N
	}
	return s, nil
}

func getBytes(ctx context.Context, hc *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	n, err := io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return int(n), err
}

// etcdDB reads etcd's database size, the part in use and the key count from its /metrics.
func etcdDB(ctx context.Context, etcdURL string) (total, inUse, keys int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(etcdURL, "/")+"/metrics", nil)
	if err != nil {
		return -1, -1, -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, -1, -1
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "etcd_mvcc_db_total_size_in_bytes":
			total = int64(v)
		case "etcd_mvcc_db_total_size_in_use_in_bytes":
			inUse = int64(v)
		case "etcd_debugging_mvcc_keys_total":
			keys = int64(v)
		}
	}
	return total, inUse, keys
}
