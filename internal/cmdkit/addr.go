package cmdkit

import (
	"fmt"
	"net"
)

// FreeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago, for an in-process worker's HTTP API.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	return addr, nil
}
