package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/wire"
)

// TestSentinelFailover runs hush serve against a master, a replica and a
// Sentinel through the HUSH_REDIS_SENTINEL_* keys, SIGKILLs the master and
// checks that the same process, without a restart, delivers jobs through the
// promoted replica and that the limiter still keeps the minimum gap there.
func TestSentinelFailover(t *testing.T) {
	const gap, tolerance = 500 * time.Millisecond, 250 * time.Millisecond
	sn := redistest.StartSentinel(t)
	fa, env := apnsEnv(t)
	env["HUSH_REDIS_SENTINEL_ADDRS"] = strings.Join(sn.Addrs, ",")
	env["HUSH_REDIS_SENTINEL_MASTER"] = sn.Name
	env["HUSH_THROTTLE_LIMITS"] = "100/1m"
	env["HUSH_THROTTLE_MIN_GAP"] = gap.String()
	env["HUSH_CONCURRENCY"] = "10"
	base, logs := serveFromEnv(t, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hush logs:\n%s", logs.String())
		}
	})
	if !strings.Contains(logs.String(), `msg="redis sentinel" master=`+sn.Name) {
		t.Errorf("logs do not say which master and Sentinels are used:\n%s", logs.String())
	}

	before := testkit.APNsToken("before")
	st := postAndWait(t, base, jobBody("before", "u-before", before))
	if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
		t.Fatalf("job before the failover: %v, want delivered", st)
	}
	ctx := context.Background()
	// The finished job's record is its entry in a done bucket (worker/store_retire.go).
	if keys, err := sn.Master.Client(t).Keys(ctx, "hush:done:*").Result(); err != nil || len(keys) != 1 {
		t.Fatalf("the finished job's record is not on the first master %s: %v %v", sn.Master.Addr, keys, err)
	}

	oldMaster := sn.Master.Addr
	killedAt := time.Now()
	sn.Master.Kill()

	// The first job is submitted while there is no master: the API answers
	// 503 until the client reaches the promoted replica.
	const after = 3
	tokens := make([]string, after)
	ids := make([]string, after)
	for i := range after {
		ids[i] = fmt.Sprintf("after-%d", i)
		tokens[i] = testkit.APNsToken(ids[i])
	}
	type result struct {
		unavailable int
		err         error
	}
	accepted := make(chan result, 1)
	go func() {
		n, err := postUntilAccepted(base, jobBody(ids[0], "u-after", tokens[0]), 60*time.Second)
		accepted <- result{n, err}
	}()
	newMaster := sn.WaitFailover(t, oldMaster, 60*time.Second)
	promoted := time.Since(killedAt)
	res := <-accepted
	if res.err != nil {
		t.Fatal(res.err)
	}
	t.Logf("the first submission after the kill was answered 503 %d times before it was accepted", res.unavailable)
	for i := 1; i < after; i++ {
		if _, err := postUntilAccepted(base, jobBody(ids[i], "u-after", tokens[i]), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		st := waitJobDone(t, base, id, 30*time.Second)
		if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
			t.Errorf("job %s after the failover: %v, want delivered", id, st)
		}
	}

	reqs := fa.Requests()
	var arrivals []time.Time
	for i, tok := range append([]string{before}, tokens...) {
		got := testkit.RequestsFor(reqs, tok)
		if len(got) != 1 {
			t.Errorf("token %d got %d pushes, want 1", i, len(got))
			continue
		}
		if i > 0 {
			arrivals = append(arrivals, got[0].At)
		}
	}
	if len(arrivals) != after {
		t.FailNow()
	}
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	t.Logf("Sentinel promoted %s %s after the master was killed; first delivery through it %s after the kill",
		newMaster, promoted.Round(time.Millisecond), arrivals[0].Sub(killedAt).Round(time.Millisecond))
	for i := 1; i < len(arrivals); i++ {
		if d := arrivals[i].Sub(arrivals[i-1]); d < gap-tolerance {
			t.Errorf("pushes %d and %d to u-after only %s apart, want at least the gap %s", i-1, i, d, gap)
		}
	}
	// The limiter on the new master booked the three pushes a gap apart
	// (they were submitted back to back, so without it they would arrive
	// together).
	var ts wire.ThrottleStatus
	if err := getJSON(base+"/v1/users/u-after/throttle", &ts); err != nil {
		t.Fatal(err)
	}
	if len(ts.Entries) != after {
		t.Fatalf("the limiter holds %d entries for u-after, want %d: %+v", len(ts.Entries), after, ts.Entries)
	}
	for i := 1; i < len(ts.Entries); i++ {
		if d := ts.Entries[i].At.Sub(ts.Entries[i-1].At); d < gap {
			t.Errorf("the limiter booked %s and %s only %s apart, want at least %s", ts.Entries[i-1].Member, ts.Entries[i].Member, d, gap)
		}
	}

	// The records and the limiter's state are on the promoted replica.
	nm := redis.NewClient(&redis.Options{Addr: newMaster})
	defer nm.Close()
	if n, err := nm.Exists(ctx, "hush:throttle:{u-after}").Result(); err != nil || n != 1 {
		t.Errorf("the user's limiter key is not on the new master %s: %d %v", newMaster, n, err)
	}
	// The finished jobs' records are entries in done buckets (worker/store_retire.go).
	done := map[string]bool{}
	buckets, err := nm.Keys(ctx, "hush:done:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range buckets {
		for _, id := range nm.HKeys(ctx, k).Val() {
			done[id] = true
		}
	}
	for _, id := range ids {
		if !done[id] {
			t.Errorf("job %s's record is not on the new master %s (done entries: %v)", id, newMaster, done)
		}
	}
}

// apnsEnv starts a fake APNs and returns it with the HUSH_APNS_* keys that
// point the real APNs client at it.
func apnsEnv(t *testing.T) (*fake.APNs, map[string]string) {
	t.Helper()
	fa, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fa.Close)
	dir := t.TempDir()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := fa.WriteCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fa, map[string]string{
		"HUSH_APNS_KEY_FILE": keyFile, "HUSH_APNS_KEY_ID": keyID, "HUSH_APNS_TEAM_ID": teamID,
		"HUSH_APNS_TOPIC": testkit.APNsTopic, "HUSH_APNS_ENDPOINT": fa.URL, "HUSH_APNS_CA_FILE": caFile,
	}
}

// fcmEnv starts a fake FCM and returns it with the HUSH_FCM_* keys that
// point hush at it.
func fcmEnv(t *testing.T) (*fake.FCM, map[string]string) {
	t.Helper()
	ff, err := fake.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ff.Close)
	saFile, err := fake.WriteServiceAccount(t.TempDir(), ff.TokenURL(), testkit.FCMProject)
	if err != nil {
		t.Fatal(err)
	}
	return ff, map[string]string{"HUSH_FCM_CREDENTIALS_FILE": saFile, "HUSH_FCM_ENDPOINT": ff.Endpoint()}
}

func jobBody(id, user, token string) string {
	return `{"id":"` + id + `","recipients":[{"user_id":"` + user + `","devices":[{"platform":"apns","token":"` + token + `"}]}],"alert":{"title":"` + id + `"}}`
}

// postUntilAccepted submits body until the API accepts it (202, or 200 for
// a duplicate of an earlier attempt), retrying its 503s and connection
// errors until timeout. It returns how many 503s it got.
func postUntilAccepted(base, body string, timeout time.Duration) (int, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(timeout)
	unavailable := 0
	for {
		resp, err := c.Post(base+"/v1/notifications", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusAccepted, http.StatusOK:
				return unavailable, nil
			case http.StatusServiceUnavailable:
				unavailable++
				err = fmt.Errorf("answered %s", resp.Status)
			default:
				return unavailable, fmt.Errorf("POST %s: %s", body, resp.Status)
			}
		}
		if time.Now().After(deadline) {
			return unavailable, fmt.Errorf("POST not accepted within %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// waitJobDone polls GET /v1/notifications/{id} until the job is done.
func waitJobDone(t *testing.T, base, id string, timeout time.Duration) map[string]any {
	t.Helper()
	var st map[string]any
	testkit.WaitFor(t, timeout, "job "+id+" done", func() bool {
		resp, err := http.Get(base + "/v1/notifications/" + id)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		st = nil
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st["state"] == "done"
	})
	return st
}
