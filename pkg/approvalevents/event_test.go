package approvalevents

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMarshalStructuredCloudEvent(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 30, 0, 0, time.FixedZone("x", 3600))
	deadline := at.Add(10 * time.Minute).UTC()
	d := Data{Namespace: "team", Name: "sh-q8v4d", UID: "8d1c", Tool: "sh", ToolKind: "Tool", Scope: "demo",
		Requester: "agent", Card: "sh: wget -qO- http://x", ArgumentsDigest: "sha256:ab",
		Message: "needs a person", ApprovalDeadline: deadline,
		ApproveCommand: "toolgate approve sh-q8v4d -n team", DenyCommand: "toolgate deny sh-q8v4d -n team"}
	body, err := Marshal(TypeRequested, d, at)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	want := map[string]any{
		"specversion":     "1.0",
		"id":              "8d1c.requested",
		"source":          "/apis/toolgate.dev/v1alpha1/namespaces/team/toolcalls",
		"type":            "dev.toolgate.toolcall.approval.requested",
		"subject":         "team/sh-q8v4d",
		"time":            "2026-12-02T05:30:00Z",
		"datacontenttype": "application/json",
		"data": map[string]any{
			"namespace": "team", "name": "sh-q8v4d", "uid": "8d1c", "tool": "sh", "toolKind": "Tool", "scope": "demo",
			"requester": "agent", "card": "sh: wget -qO- http://x", "argumentsDigest": "sha256:ab", "message": "needs a person",
			"approvalDeadline": "2026-12-02T05:40:00Z",
			"approveCommand":   "toolgate approve sh-q8v4d -n team", "denyCommand": "toolgate deny sh-q8v4d -n team",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("event (-want +got):\n%s", diff)
	}
	n, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, n.Data); diff != "" {
		t.Fatalf("decoded data (-want +got):\n%s", diff)
	}
}

func TestIDsDifferPerEventAndStayPerCall(t *testing.T) {
	ids := map[string]bool{}
	for _, typ := range []string{TypeRequested, TypeApproved, TypeDenied, TypeExpired} {
		ids[ID("u", typ)] = true
	}
	if len(ids) != 4 || ID("u", TypeExpired) != "u.expired" {
		t.Fatalf("ids %v", ids)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, body := range []string{`not json`, `{"specversion":"1.0"}`, `{"specversion":"1.0","id":"x","source":"/s","type":"t","data":"x"}`} {
		if _, err := Decode([]byte(body)); err == nil {
			t.Errorf("Decode(%s) succeeded", body)
		}
	}
}

// BenchmarkMarshalSign is the sender's cost of one event: build the CloudEvent, sign it.
func BenchmarkMarshalSign(b *testing.B) {
	d := Data{Namespace: "team", Name: "sh-q8v4d", UID: "4b6f0c1e-3a3d-4d0b-9a53-0f6f0e9d2c11", Tool: "sh", Requester: "agent",
		Card: "sh: wget -qO- http://10.0.0.1", ArgumentsDigest: "sha256:9f2c", ApprovalDeadline: time.Now()}
	key := []byte("0123456789abcdef0123456789abcdef")
	for b.Loop() {
		body, err := Marshal(TypeRequested, d, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		Sign(key, body, time.Now())
	}
}

// BenchmarkVerify is the receiver's cost of checking one event.
func BenchmarkVerify(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	body, _ := Marshal(TypeRequested, Data{Namespace: "team", Name: "c", UID: "u", Card: "echo hi"}, time.Now())
	ts, sig := Sign(key, body, time.Now())
	v := Verifier{Keys: [][]byte{key}}
	for b.Loop() {
		if err := v.Verify(body, ts, sig); err != nil {
			b.Fatal(err)
		}
	}
}
