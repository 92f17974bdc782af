package pipeline

import (
	"testing"
	"time"
)

// TestAdmitTimes: with a clock, each stage Admit reaches gets consecutive intervals in
// stage order; a stage not reached stays zero; without a clock nothing is timed.
func TestAdmitTimes(t *testing.T) {
	c := newTestCompiler(t)
	schema := mustSchema(t, c, grepSchema)
	tick := time.Unix(1000, 0)
	now := func() time.Time { tick = tick.Add(time.Millisecond); return tick }

	a := Admit(AdmitInput{Arguments: []byte(`{"pattern":"x"}`), Schema: schema, Now: now})
	iv := []Interval{a.Times.Freeze, a.Times.Validate, a.Times.PreExecute, a.Times.Guard}
	for i, v := range iv {
		if v.Start.IsZero() || !v.End.After(v.Start) {
			t.Fatalf("stage %d interval %v: want start < end", i, v)
		}
		if i > 0 && !v.Start.Equal(iv[i-1].End) {
			t.Fatalf("stage %d starts at %v, the previous ended at %v", i, v.Start, iv[i-1].End)
		}
	}

	bad := Admit(AdmitInput{Arguments: []byte(`{"path":"/etc"}`), Schema: schema, Now: now})
	if bad.Times.Validate.End.IsZero() || !bad.Times.PreExecute.Start.IsZero() || !bad.Times.Guard.Start.IsZero() {
		t.Fatalf("a schema violation times freeze and validate only: %+v", bad.Times)
	}

	if u := Admit(AdmitInput{Arguments: []byte(`{"pattern":"x"}`), Schema: schema}); u.Times != (AdmitTimes{}) {
		t.Fatalf("untimed Admit has times %+v", u.Times)
	}
}
