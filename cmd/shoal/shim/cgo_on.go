//go:build cgo

package main

// withCgo: built with cgo, so os/user resolves names through libc (NSS).
const withCgo = true
