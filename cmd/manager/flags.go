package main

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func intFlag(dst *int32) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 32)
		if err == nil {
			*dst = int32(v)
		}
		return err
	}
}

func corev1ResourceName(name string) corev1.ResourceName { return corev1.ResourceName(name) }

func ptrDuration(d time.Duration) *time.Duration { return &d }
