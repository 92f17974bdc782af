package gateway

import (
	"testing"
	"time"
)

func TestRefreshBackoff(t *testing.T) {
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		if got := refreshBackoff(i); got != w {
			t.Errorf("refreshBackoff(%d) = %s, want %s", i, got, w)
		}
	}
	if got := refreshBackoff(1000); got != time.Minute {
		t.Errorf("refreshBackoff(1000) = %s", got)
	}
}
