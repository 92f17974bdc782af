package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/controllers"
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

// Negative retention settings are refused with the flag's name; 0 is "none" everywhere.
func TestValidateRetention(t *testing.T) {
	tests := []struct {
		name string
		opts controllers.RetentionOptions
		err  string
	}{
		{name: "defaults", opts: controllers.DefaultRetentionOptions()},
		{name: "all zero", opts: controllers.RetentionOptions{}},
		{name: "negative ttl", opts: controllers.RetentionOptions{TTL: -time.Second}, err: "--toolcall-ttl"},
		{name: "negative floor", opts: controllers.RetentionOptions{MinTTL: -time.Second}, err: "--toolcall-min-ttl -1s is negative"},
		{name: "negative history", opts: controllers.RetentionOptions{HistoryFailed: -1}, err: "history limits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateRetention(tc.opts)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("validateRetention = %v, want error containing %q", err, tc.err)
			}
		})
	}
}
