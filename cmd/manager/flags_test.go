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

// Negative retention settings are refused with the flag's name; 0 is "none" everywhere but
// for the ceiling, which must be positive and at least the floor and the default TTL.
func TestValidateRetention(t *testing.T) {
	week := controllers.DefaultMaxTTL
	tests := []struct {
		name string
		opts controllers.RetentionOptions
		err  string
	}{
		{name: "defaults", opts: controllers.DefaultRetentionOptions()},
		{name: "all zero but the ceiling", opts: controllers.RetentionOptions{MaxTTL: week}},
		{name: "negative ttl", opts: controllers.RetentionOptions{TTL: -time.Second, MaxTTL: week}, err: "--toolcall-ttl"},
		{name: "negative floor", opts: controllers.RetentionOptions{MinTTL: -time.Second, MaxTTL: week}, err: "--toolcall-min-ttl -1s is negative"},
		{name: "negative history", opts: controllers.RetentionOptions{HistoryFailed: -1, MaxTTL: week}, err: "history limits"},
		{name: "no ceiling", opts: controllers.RetentionOptions{}, err: "--toolcall-max-ttl 0s is not positive"},
		{name: "negative ceiling", opts: controllers.RetentionOptions{MaxTTL: -time.Hour}, err: "--toolcall-max-ttl -1h0m0s is not positive"},
		{name: "ceiling equal to the floor", opts: controllers.RetentionOptions{MinTTL: time.Hour, MaxTTL: time.Hour}},
		{name: "floor above the ceiling", opts: controllers.RetentionOptions{MinTTL: 2 * time.Hour, MaxTTL: time.Hour},
			err: "--toolcall-min-ttl 2h0m0s is above --toolcall-max-ttl 1h0m0s"},
		{name: "default TTL above the ceiling", opts: controllers.RetentionOptions{TTL: 48 * time.Hour, MaxTTL: 24 * time.Hour},
			err: "--toolcall-ttl 48h0m0s is above --toolcall-max-ttl 24h0m0s"},
		{name: "keeping calls that set nothing is the platform's choice", opts: controllers.RetentionOptions{TTL: 0, MaxTTL: time.Hour}},
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
