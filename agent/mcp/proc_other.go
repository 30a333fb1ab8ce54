//go:build !unix

package mcp

import "os/exec"

func setProcAttrs(*exec.Cmd) {}

func killGroup(int) {}
