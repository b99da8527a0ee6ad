//go:build linux && !amd64 && !arm64

package ipcguard

// arches is empty where the syscall numbers are not written down: Install
// then fails, and the levels that need the guard are refused.
var arches []abi
