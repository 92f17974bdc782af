package toolcall

import (
	"bytes"
	"encoding/json"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/toolgate/toolgate/pipeline"
)

// apiServerRoundTrip is what the API server makes of a custom resource's JSON value: it
// decodes it as utiljson does (int64 or float64 numbers) and encodes it with encoding/json,
// on the write and again on every read.
func apiServerRoundTrip(raw []byte) ([]byte, error) {
	for range 2 { // written, then read back
		var decoded any
		if err := utiljson.Unmarshal(raw, &decoded); err != nil {
			return nil, err
		}
		var err error
		if raw, err = json.Marshal(decoded); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// FuzzStoredForm: stage 8's stored form (pipeline.StoreResult, which imports no Kubernetes
// module) is the API server's: the content it writes, put through the API server's own
// decoding and encoding, is the content its digest was made of, and what the API server
// cannot store is refused by both.
func FuzzStoredForm(f *testing.F) {
	for _, s := range []string{`{"one":1.0,"exp":1E+2,"big":123456789012345678901234567890}`, `[-0,-0.0,0.0,1e-400]`,
		`[9223372036854775807,9223372036854775808,-9223372036854775808,-9223372036854775809]`,
		`[1e20,1e21,1e-6,1e-7,0.1,123456789.0,1.7976931348623157e308]`, `{"n":1e400}`, `"text <&> \u2028"`,
		`[1.00000000000000000001,5e-324,2.5e-324,100000000000000000000000]`, `{"a":{"b":[[{"c":1.50}]]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var content any
		if dec.Decode(&content) != nil || content == nil {
			return
		}
		stored, err := pipeline.StoreResult(pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: content})
		tool, err2 := json.Marshal(content) // the tool's value, as any encoder would send it
		if err2 != nil {
			t.Fatal(err2)
		}
		want, werr := apiServerRoundTrip(tool)
		if (err != nil) != (werr != nil) {
			t.Fatalf("StoreResult: %v; the API server: %v", err, werr)
		}
		if err != nil {
			return
		}
		back, rerr := apiServerRoundTrip(stored.Content)
		if rerr != nil || !bytes.Equal(back, want) {
			t.Fatalf("stored %s, which the API server keeps as %s (%v); it keeps the tool's content as %s", stored.Content, back, rerr, want)
		}
		dec = json.NewDecoder(bytes.NewReader(back))
		dec.UseNumber()
		var read any
		if err := dec.Decode(&read); err != nil {
			t.Fatal(err)
		}
		digest, err := pipeline.FreezeResult(pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: read})
		if err != nil || digest.Digest() != stored.Frozen.Digest() {
			t.Fatalf("the digest is not of what the API server returns (%s): %v", back, err)
		}
	})
}
