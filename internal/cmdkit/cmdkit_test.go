package cmdkit

import (
	"fmt"
	"strings"
	"testing"
)

func TestPlural(t *testing.T) {
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{0, "user", "0 users"},
		{1, "user", "1 user"},
		{4, "user", "4 users"},
		{1, "push", "1 push"},
		{5, "push", "5 pushes"},
		{3, "master", "3 masters"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := Plural(tt.n, tt.noun); got != tt.want {
				t.Errorf("Plural(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
			}
		})
	}
}

func TestLogTailKeepsTheLastRecords(t *testing.T) {
	l := &LogTail{Max: 3, Skip: "noise"}
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(l, "record %d\n", i)
		fmt.Fprintf(l, "noise %d\n", i)
	}
	if want, got := strings.Join([]string{"record 3", "record 4", "record 5"}, "\n"), l.String(); got != want {
		t.Errorf("tail:\n%s\nwant:\n%s", got, want)
	}
}

func TestFreeLoopbackAddr(t *testing.T) {
	addr, err := FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || addr == "127.0.0.1:0" {
		t.Errorf("FreeLoopbackAddr() = %q, want 127.0.0.1 and a port", addr)
	}
}
