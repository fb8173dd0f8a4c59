package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/bench"
)

// TestE2EScaleOutSpreadsTheWork: does a 3-master Redis Cluster share
// hush's work evenly enough for it to carry about 3 times what one master
// can? On 2 shared cores that cannot be timed, so it is counted: 3
// processes run a burst of single-recipient jobs and a fan-out job, and
// each master's commands (INFO commandstats) and CPU (INFO cpu) over the
// burst are compared, and every command each master ran (MONITOR) is
// counted by the key it touched. No master may take more than 45 % of the
// commands or the CPU, no key more than 5 % of the commands, and the
// busiest master at most 40 % of either (the cluster saturates when its
// busiest master does: 40 % leaves it 2.5 times its own per-master work).
// This checks the spread only: a cluster also costs more Redis CPU per
// delivery than one server (scripts cannot batch across nodes, and a
// master in cluster mode checks each command against the slot map), which
// hush bench measures (docs/performance.md). The figures, and the ceilings they imply (1 s over the
// Redis CPU per delivery), are logged.
func TestE2EScaleOutSpreadsTheWork(t *testing.T) {
	const masters, shards = 3, 8
	const maxMasterShare, maxKeyShare, minScale = 0.45, 0.05, 2.5
	c := startCluster(t, clusterOptions{
		procs: 3, concurrency: e2eConcurrency, maxRetry: 3, redisMasters: masters,
		env: []string{"HUSH_DELIVERY_SHARDS=" + strconv.Itoa(shards)},
	})
	cc := c.rdb.(*redis.ClusterClient)
	// Many users, one job each, so that no user's limiter key is itself a
	// hot key; and two fan-out jobs to other users.
	jobs, want := burst{prefix: "so", users: 800, perUser: 1}.jobs()
	fjobs, fwant := c.fanoutJobs(fanout{prefix: "sf", users: 200, jobs: 1})
	jobs, want = append(jobs, fjobs...), append(want, fwant...)
	deliveries := 800 + 200

	before := masterStats(t, cc)
	mon := startMonitors(t, c.rc.Addrs())
	c.submit(jobs, c.procs, "")
	c.waitPushes(len(want), 2*time.Minute) // reads the fakes only: no Redis command of ours in the counts
	byKey, byMaster, seen := mon.stop()
	after := masterStats(t, cc)

	c.waitDrained(want, time.Minute)
	arrs := c.arrivals()
	c.assertDelivered(arrs, want, 0)
	c.assertTimelines(arrs)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)

	var totalCmds, totalCPU float64
	cmds, cpu := map[string]float64{}, map[string]float64{}
	for _, addr := range c.rc.Addrs() {
		cmds[addr] = after[addr].calls - before[addr].calls
		cpu[addr] = after[addr].cpu - before[addr].cpu
		totalCmds += cmds[addr]
		totalCPU += cpu[addr]
	}
	var lines []string
	busiest := 0.0
	for _, addr := range c.rc.Addrs() {
		cs, us := cmds[addr]/totalCmds, cpu[addr]/totalCPU
		busiest = max(busiest, us, cs)
		lines = append(lines, fmt.Sprintf("%s: %.0f commands (%.1f %%), %.0f ms CPU (%.1f %%), %d commands seen by MONITOR",
			addr, cmds[addr], 100*cs, 1000*cpu[addr], 100*us, byMaster[addr]))
		if cs > maxMasterShare {
			t.Errorf("master %s ran %.1f %% of the commands, want at most %.0f %%", addr, 100*cs, 100*maxMasterShare)
		}
		if us > maxMasterShare {
			t.Errorf("master %s spent %.1f %% of the CPU, want at most %.0f %%", addr, 100*us, 100*maxMasterShare)
		}
	}
	keys := slices.SortedFunc(maps.Keys(byKey), func(a, b string) int { return byKey[b] - byKey[a] })
	var top []string
	for _, k := range keys[:min(8, len(keys))] {
		top = append(top, fmt.Sprintf("%s %.2f %%", k, 100*float64(byKey[k])/float64(seen)))
	}
	for _, k := range keys {
		if share := float64(byKey[k]) / float64(seen); share > maxKeyShare {
			t.Errorf("key %s took %.1f %% of the commands (%d of %d), want at most %.0f %%", k, 100*share, byKey[k], seen, 100*maxKeyShare)
		}
	}
	if 1/busiest < minScale {
		t.Errorf("the busiest master took %.1f %% of the commands or CPU, want at most %.0f %% (the cluster's own work spread for a %.1fx ceiling, want %.1fx)", 100*busiest, 100/minScale, 1/busiest, minScale)
	}
	perDelivery := totalCPU / float64(deliveries) // seconds of Redis CPU per delivery, all masters
	t.Logf("scale-out: %d deliveries (%d pushes) over %d processes on %d masters, %d shard queues per priority:\n  %s\n  busiest keys: %s",
		deliveries, len(want), c.opts.procs, masters, shards, strings.Join(lines, "\n  "), strings.Join(top, ", "))
	t.Logf("scale-out: Redis CPU per delivery %.0f µs over all masters (MONITOR included); one master's ceiling 1 s / that = %.0f deliveries/s; "+
		"the cluster's, limited by its busiest master (%.1f %% of the commands or CPU), %.0f deliveries/s (%.2fx one master at this cost per delivery)",
		1e6*perDelivery, 1/perDelivery, 100*busiest, 1/(perDelivery*busiest), 1/busiest)
}

// masterStat is a master's INFO totals: commands run and CPU seconds.
type masterStat struct{ calls, cpu float64 }

// masterStats reads every master's commandstats and cpu.
func masterStats(t *testing.T, cc *redis.ClusterClient) map[string]masterStat {
	t.Helper()
	var mu sync.Mutex
	out := map[string]masterStat{}
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
		info, err := node.Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return err
		}
		b := bench.ParseInfo(info) // hush bench's reading
		s := masterStat{calls: float64(b.Commands), cpu: b.CPU}
		mu.Lock()
		out[node.Options().Addr] = s
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// monitors count, through MONITOR on every master, the commands each ran
// by the key each touched (the first argument of a keyed command).
type monitors struct {
	t     *testing.T
	addrs []string
	conns []net.Conn
	ended []chan struct{} // closed when a monitor reads monitorEnd
	wg    sync.WaitGroup
	mu    sync.Mutex
	byKey map[string]int
	per   map[string]int // master -> commands seen
	seen  int
}

// keyless are commands whose first argument is not a key (EVALSHA's
// commands are counted as the script runs them).
var keyless = map[string]bool{
	"evalsha": true, "eval": true, "evalsha_ro": true, "script": true, "ping": true, "info": true, "cluster": true,
	"client": true, "multi": true, "exec": true, "discard": true, "hello": true, "select": true, "readonly": true,
	"command": true, "time": true, "auth": true, "echo": true, "config": true, "dbsize": true, "scan": true,
	"keys": true, "wait": true, "publish": true, "role": true, "memory": true,
}

func startMonitors(t *testing.T, addrs []string) *monitors {
	t.Helper()
	m := &monitors{t: t, byKey: map[string]int{}, per: map[string]int{}}
	for _, addr := range addrs {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReaderSize(conn, 1<<20)
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			t.Fatalf("MONITOR on %s: %q %v", addr, line, err)
		}
		ended := make(chan struct{})
		m.addrs, m.conns, m.ended = append(m.addrs, addr), append(m.conns, conn), append(m.ended, ended)
		m.wg.Go(func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				args := monitorArgs(line)
				if len(args) == 0 {
					continue
				}
				if len(args) == 2 && strings.EqualFold(args[0], "echo") && args[1] == monitorEnd {
					close(ended)
					return
				}
				m.mu.Lock()
				m.seen++
				m.per[addr]++
				if cmd := strings.ToLower(args[0]); !keyless[cmd] && len(args) > 1 {
					m.byKey[args[1]]++
				}
				m.mu.Unlock()
			}
		})
	}
	return m
}

// monitorEnd is the ECHO argument that ends a monitor's count.
const monitorEnd = "hush-e2e-monitor-end"

// stop ends the monitors and returns the counts: per key, per master, and
// every command seen. It sends each master an ECHO of monitorEnd and
// counts up to it: a master runs one command at a time, so every command
// it ran before has been read by then.
func (m *monitors) stop() (byKey, perMaster map[string]int, seen int) {
	for i, addr := range m.addrs {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			m.t.Fatal(err)
		}
		_, err = fmt.Fprintf(conn, "ECHO %s\r\n", monitorEnd)
		if err == nil {
			_, err = bufio.NewReader(conn).ReadString('\n')
		}
		conn.Close()
		if err != nil {
			m.t.Fatalf("ECHO on %s: %v", addr, err)
		}
		select {
		case <-m.ended[i]:
		case <-time.After(30 * time.Second):
			m.t.Fatalf("the monitor of %s did not read its ECHO within 30 s", addr)
		}
	}
	for _, c := range m.conns {
		c.Close()
	}
	m.wg.Wait()
	return m.byKey, m.per, m.seen
}

// monitorArgs parses a MONITOR line (`+1700000000.123 [0 127.0.0.1:1234]
// "HGET" "key" "field"`) into its quoted arguments, unescaped enough to
// tell keys apart.
func monitorArgs(line string) []string {
	_, rest, ok := strings.Cut(line, "] ")
	if !ok {
		return nil
	}
	var out []string
	for {
		open := strings.IndexByte(rest, '"')
		if open < 0 {
			return out
		}
		var b strings.Builder
		i := open + 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			b.WriteByte(rest[i])
		}
		out = append(out, b.String())
		if i >= len(rest) {
			return out
		}
		rest = rest[i+1:]
	}
}
