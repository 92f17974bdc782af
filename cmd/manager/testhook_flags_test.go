package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/controllers/options"
)

func TestTestHookFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    time.Duration
		wantErr string
	}{
		{name: "off by default", want: 0},
		{name: "on", args: []string{"--test-hold-before-job-create=20s"}, want: 20 * time.Second},
		{name: "negative", args: []string{"--test-hold-before-job-create=-1s"}, wantErr: "between 0 (off) and 2m0s"},
		{name: "too long", args: []string{"--test-hold-before-job-create=3m"}, wantErr: "between 0 (off) and 2m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			o := options.DefaultCall()
			bindTestHooks(fs, &o)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := validateTestHooks(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || o.TestHoldBeforeJobCreate != tc.want {
				t.Fatalf("hold %s, error %v; want %s", o.TestHoldBeforeJobCreate, err, tc.want)
			}
		})
	}
}
