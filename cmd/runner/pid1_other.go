//go:build !linux

package main

import (
	"os/exec"
	"syscall"
)

func protectKey() error                 { return nil }
func killOthers()                       {}
func silence()                          {}
func clearTermination(_ string)         {}
func inGroup(_ *exec.Cmd)               {}
func killGroup(_ int, _ syscall.Signal) {}
