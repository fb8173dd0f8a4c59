package redistest

import (
	"context"
	"net"
	"strconv"
	"testing"
)

// TestStartTriesOtherPortsWhenOneIsTaken: a port free when chosen can be
// bound by someone else before redis-server binds it (CI once lost a
// cluster test that way: the bus port came back equal to the server's).
// Start then picks new ports instead of failing the test, for the server's
// port and for a cluster node's bus port alike.
func TestStartTriesOtherPortsWhenOneIsTaken(t *testing.T) {
	silent := takenPort(t)
	other := Start(t)
	if !other.Real() {
		t.Skip("no redis-server on PATH")
	}
	_, p, _ := net.SplitHostPort(other.Addr)
	answering, _ := strconv.Atoi(p)
	for _, tc := range []struct {
		name    string
		opts    Options
		port    int // the taken port
		takenAt int // which of the picked ports it is
	}{
		{"server port", Options{}, silent, 0},
		// Another test's Redis answers on its port: Start must not take
		// it for the server it launched.
		{"server port of another Redis", Options{}, answering, 0},
		{"cluster bus port", Options{Cluster: true}, silent, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handed := 0
			pickPorts = func(tb testing.TB, n int) []int {
				ports := FreePorts(tb, n)
				if handed == 0 {
					ports[tc.takenAt] = tc.port
				}
				handed++
				return ports
			}
			t.Cleanup(func() { pickPorts = FreePorts })
			s := Start(t, tc.opts)
			if handed != 2 {
				t.Fatalf("Start picked ports %d times, want 2 (the taken one, then others)", handed)
			}
			if s.Addr == "127.0.0.1:"+strconv.Itoa(tc.port) {
				t.Fatalf("server on the taken port %d", tc.port)
			}
			if err := s.Client(t).Ping(context.Background()).Err(); err != nil {
				t.Fatalf("server on %s does not answer: %v", s.Addr, err)
			}
		})
	}
}

// TestStartSentinelTriesAnotherPort: the same for a Sentinel's port.
func TestStartSentinelTriesAnotherPort(t *testing.T) {
	port := takenPort(t)
	picks := 0
	pickPorts = func(tb testing.TB, n int) []int {
		ports := FreePorts(tb, n)
		if picks == 2 { // the master's, the replica's, then the Sentinel's
			ports[0] = port
		}
		picks++
		return ports
	}
	t.Cleanup(func() { pickPorts = FreePorts })
	s := StartSentinel(t)
	if picks != 4 {
		t.Fatalf("ports picked %d times, want 4 (master, replica, the taken one, another)", picks)
	}
	if s.Addrs[0] == "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("Sentinel on the taken port %d", port)
	}
}

// takenPort returns a port a listener of the test holds (that accepts no
// connection) until the test ends.
func takenPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}
