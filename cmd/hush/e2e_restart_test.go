package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hushpush/hush/providers/fake"
)

// TestE2ERollingRestart: a rolling deploy with a slow provider. Three
// processes with HUSH_SHUTDOWN_TIMEOUT=1.5s deliver three jobs of 300
// recipients each to a provider that answers every push after 1 s, so a
// chunk (100 recipients in waves of 16) takes several seconds, longer than
// the shutdown timeout. Each process in turn is sent SIGTERM mid-burst,
// waited for and started again (as Kubernetes replaces pods one by one).
// Every push the provider answered was recorded before its process exited,
// so nothing is sent twice, nothing is lost, and the rules hold. (When a
// chunk kept its answers in memory until its end: 450 duplicates in 1,800
// pushes.)
func TestE2ERollingRestart(t *testing.T) {
	start := time.Now()
	c := startCluster(t, clusterOptions{procs: 3, concurrency: e2eConcurrency, maxRetry: 3,
		env: []string{"HUSH_SHUTDOWN_TIMEOUT=1500ms"}})
	const latency = time.Second
	c.apns.Script("", fake.OK().WithLatency(latency))
	c.fcm.Script("", fake.OK().WithLatency(latency))
	jobs, want := c.fanoutJobs(fanout{prefix: "rr", users: 300, jobs: 3})
	first := time.Now()
	c.submit(jobs, c.procs, "")
	c.waitPushes(len(want)/10, time.Minute)
	var log []string
	for i, p := range slices.Clone(c.procs) {
		at := c.accepted()
		stopAt := time.Now()
		p.stop(t) // SIGTERM, wait for the exit
		if p.waitErr != nil {
			t.Errorf("%s exited with %v after SIGTERM", p.name, p.waitErr)
		}
		stopped := time.Since(stopAt)
		c.procs[i] = c.startProc(p.name + "-2")
		c.waitReady(c.procs[i])
		log = append(log, fmt.Sprintf("%s at %d requests: stopped in %s", p.name, at, stopped.Round(10*time.Millisecond)))
	}
	if n := len(delivered(c.arrivals())); n >= len(want) {
		t.Fatalf("the burst was over (%d of %d pushes) before the last restart: nothing was tested", n, len(want))
	}
	c.waitDrained(want, 4*time.Minute)
	arrs := c.arrivals()
	extra := c.assertDelivered(arrs, want, 0)
	c.assertTimelines(arrs)
	c.assertNothingArchived()
	c.assertJobsDone(jobs)
	cancelled := 0
	for _, a := range arrs {
		if a.Answered.IsZero() {
			cancelled++
		}
	}
	t.Logf("rolling restart: %s; %d pushes (%d requests, %d cancelled before their answer) delivered %s after the first POST, %d duplicates (whole test %s)",
		log, len(want), len(arrs), cancelled, time.Since(first).Round(100*time.Millisecond), extra, time.Since(start).Round(100*time.Millisecond))
}
