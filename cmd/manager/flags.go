package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/controllers"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// retentionFlags are --job-retention and the deprecated --job-ttl it replaces.
type retentionFlags struct {
	fs        *flag.FlagSet
	retention time.Duration
	ttl       string
}

func bindRetention(fs *flag.FlagSet, def time.Duration) *retentionFlags {
	f := &retentionFlags{fs: fs, retention: def}
	fs.DurationVar(&f.retention, "job-retention", def,
		"how long a tool Job and its Pod are kept after the operator recorded the attempt's outcome; then the operator deletes the Job")
	fs.StringVar(&f.ttl, "job-ttl", "",
		"deprecated, use --job-retention: seconds, read as --job-retention=<seconds>s (tool Jobs no longer carry ttlSecondsAfterFinished)")
	return f
}

// resolve returns the retention once the flags are parsed, with a deprecation notice when
// --job-ttl was given. Giving both flags is an error: which one was meant is not clear.
func (f *retentionFlags) resolve() (time.Duration, string, error) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	d, notice := f.retention, ""
	if set["job-ttl"] {
		if set["job-retention"] {
			return 0, "", errors.New("--job-ttl is deprecated and replaced by --job-retention: give only --job-retention")
		}
		secs, err := strconv.ParseInt(f.ttl, 10, 32)
		if err != nil {
			return 0, "", fmt.Errorf("--job-ttl %q: want a number of seconds (deprecated: use --job-retention, a duration such as 10m)", f.ttl)
		}
		d = time.Duration(secs) * time.Second
		notice = "--job-ttl is deprecated: tool Jobs no longer carry ttlSecondsAfterFinished (the TTL controller deletes a " +
			"finished Pod, and with it a result not yet recorded); read as --job-retention=" + d.String()
	}
	if d < 0 {
		return 0, "", fmt.Errorf("the Job retention %s is negative", d)
	}
	return d, notice, nil
}

// validateRetention refuses negative TTLs, floors and history limits, a ceiling that is not
// positive, and a floor or default TTL above the ceiling.
func validateRetention(o controllers.RetentionOptions) error {
	switch {
	case o.TTL < 0:
		return fmt.Errorf("--toolcall-ttl %s is negative (0 keeps finished calls forever)", o.TTL)
	case o.MinTTL < 0:
		return fmt.Errorf("--toolcall-min-ttl %s is negative (0: no floor)", o.MinTTL)
	case o.MaxTTL <= 0:
		return fmt.Errorf("--toolcall-max-ttl %s is not positive: the ceiling of every TTL a call or tool sets (default %s)", o.MaxTTL, controllers.DefaultMaxTTL)
	case o.MinTTL > o.MaxTTL:
		return fmt.Errorf("--toolcall-min-ttl %s is above --toolcall-max-ttl %s", o.MinTTL, o.MaxTTL)
	case o.TTL > o.MaxTTL:
		return fmt.Errorf("--toolcall-ttl %s is above --toolcall-max-ttl %s: raise the ceiling or lower the default", o.TTL, o.MaxTTL)
	case o.HistorySucceeded < 0 || o.HistoryFailed < 0:
		return fmt.Errorf("history limits must not be negative (0: no limit): succeeded %d, failed %d", o.HistorySucceeded, o.HistoryFailed)
	}
	return nil
}

func corev1ResourceName(name string) corev1.ResourceName { return corev1.ResourceName(name) }

func ptrDuration(d time.Duration) *time.Duration { return &d }
