package main

import (
	"strings"
	"testing"
)

func TestCompareIgnoresLabelsStyleAndOrder(t *testing.T) {
	a, err := read(strings.NewReader(`
# a comment
apiVersion: v1
kind: ServiceAccount
metadata:
  name: toolgate
  namespace: ns
  labels: {helm.sh/chart: toolgate-0.1.0}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns}
data: {a: "1", b: "2"}
`), []string{"Namespace"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := read(strings.NewReader(`apiVersion: v1
kind: ConfigMap
metadata:
  namespace: ns
  name: c
data:
  b: '2'
  a: "1"
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: toolgate, namespace: ns}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := compare(a, b, "a", "b"); len(d) != 0 {
		t.Fatalf("want no differences, got %v", d)
	}
}

func TestCompareReportsDifferences(t *testing.T) {
	a, _ := read(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x}\n"), nil)
	b, _ := read(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: y}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"), nil)
	d := compare(a, b, "a", "b")
	if len(d) != 2 || !strings.Contains(d[0], "v1 ConfigMap c differs") || d[1] != "only in b: v1 Secret s" {
		t.Fatalf("got %q", d)
	}
}

func TestReadRejectsDuplicates(t *testing.T) {
	_, err := read(strings.NewReader("kind: A\nmetadata: {name: x}\n---\nkind: A\nmetadata: {name: x}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("got %v", err)
	}
}
