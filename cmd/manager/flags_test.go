package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// --job-retention replaces --job-ttl: the old flag is still accepted, read as seconds of
// retention with a deprecation notice; both at once, or a bad value, are refused.
func TestJobRetentionFlags(t *testing.T) {
	tests := []struct {
		args   []string
		want   time.Duration
		notice bool
		err    string
	}{
		{args: nil, want: 10 * time.Minute},
		{args: []string{"--job-retention=90s"}, want: 90 * time.Second},
		{args: []string{"--job-retention=0"}, want: 0},
		{args: []string{"--job-ttl=300"}, want: 5 * time.Minute, notice: true},
		{args: []string{"--job-ttl=300", "--job-retention=1m"}, err: "give only --job-retention"},
		{args: []string{"--job-ttl=5m"}, err: "want a number of seconds"},
		{args: []string{"--job-ttl=-1"}, err: "negative"},
		{args: []string{"--job-retention=-1s"}, err: "negative"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := bindRetention(fs, 10*time.Minute)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, notice, err := f.resolve()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || (notice != "") != tc.notice {
				t.Fatalf("got %v, notice %q, err %v; want %v, notice %v", got, notice, err, tc.want, tc.notice)
			}
			if tc.notice && !strings.Contains(notice, "deprecated") {
				t.Errorf("notice %q does not say deprecated", notice)
			}
		})
	}
}
