package cmdkit

import (
	"bytes"
	"strings"
	"sync"
)

// LogTail keeps the last Max log records written to it, to show with a run
// that fails. A record containing Skip (when not empty) is not kept. It is
// safe for concurrent use.
type LogTail struct {
	Max  int
	Skip string

	mu    sync.Mutex
	lines []string
}

func (l *LogTail) Write(p []byte) (int, error) {
	if l.Skip != "" && bytes.Contains(p, []byte(l.Skip)) {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimRight(string(p), "\n"))
	if len(l.lines) > l.Max {
		l.lines = l.lines[len(l.lines)-l.Max:]
	}
	return len(p), nil
}

// String returns the records kept, one a line, oldest first.
func (l *LogTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
