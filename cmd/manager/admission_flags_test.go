package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/controllers/startgate"
	"github.com/toolgate/toolgate/internal/podspec"
)

func TestAdmissionFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    startgate.Options
		wantErr string
	}{
		{name: "defaults", want: startgate.Options{MaxWait: 10 * time.Minute}},
		{name: "kueue", args: []string{"--admission-queue=tools", "--admission-max-wait=2m"}, want: startgate.Options{Queue: "tools", MaxWait: 2 * time.Minute}},
		{name: "bound", args: []string{"--max-concurrent-starts=4"}, want: startgate.Options{MaxWait: 10 * time.Minute, MaxConcurrentStarts: 4}},
		{name: "bad queue", args: []string{"--admission-queue=Tools_1"}, wantErr: "--admission-queue"},
		{name: "wait too short", args: []string{"--admission-max-wait=500ms"}, wantErr: "between 1s and 24h"},
		{name: "wait too long", args: []string{"--admission-max-wait=25h"}, wantErr: "between 1s and 24h"},
		{name: "negative bound", args: []string{"--max-concurrent-starts=-1"}, wantErr: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			o := startgate.DefaultOptions()
			bindAdmission(fs, &o)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, o); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
		})
	}
}

func TestStartAllowanceFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		wantErr bool
	}{
		{args: nil, want: 30 * time.Second},
		{args: []string{"--start-allowance=0s"}, want: 0},
		{args: []string{"--start-allowance=2m"}, want: 2 * time.Minute},
		{args: []string{"--start-allowance=-1s"}, wantErr: true},
		{args: []string{"--start-allowance=11m"}, wantErr: true},
	} {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		d := podspec.DefaultOptions().StartAllowance
		bindStartAllowance(fs, &d)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := validateStartAllowance(d)
		if tc.wantErr != (err != nil) || !tc.wantErr && d != tc.want {
			t.Errorf("%v: allowance %v, error %v; want %v, error %v", tc.args, d, err, tc.want, tc.wantErr)
		}
	}
}
