package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/webpush"
)

// The rules every end-to-end cluster runs with: short, so a burst of 15
// notifications per user takes seconds, and tight, so violations show.
const (
	e2eN         = 5
	e2eWindow    = 2 * time.Second
	e2eMinGap    = 300 * time.Millisecond
	e2eTolerance = 250 * time.Millisecond // docs/delivery.md: clock and network jitter
	e2eTopic     = "com.example.hush"
	e2eProject   = "hush-e2e"
	e2eSubject   = "mailto:e2e@example.com"
)

// clusterOptions shape a test cluster.
type clusterOptions struct {
	procs       int
	concurrency int
	maxRetry    int
	// env are extra KEY=VALUE settings for every process.
	env []string
	// redisMasters, when set, runs the processes on a real Redis Cluster of
	// that many masters (HUSH_REDIS_CLUSTER_ADDRS) instead of one server.
	redisMasters int
	// rules, when set, replace e2eRules: the processes' limits and gap,
	// and what assertTimelines checks.
	rules *rules
}

// cluster is a private Redis, a fake APNs, FCM and Web Push service in the
// test process, and hush serve processes configured only through HUSH_*
// variables.
type cluster struct {
	t     *testing.T
	opts  clusterOptions
	redis *redistest.Server  // nil on a Redis Cluster
	rc    *redistest.Cluster // nil on one server
	rdb   redis.UniversalClient
	insp  *asynq.Inspector
	apns  *fake.APNs
	fcm   *fake.FCM
	// webpush is the fake push service; its subscriptions are made for
	// vapidKey, the public key the processes sign with.
	webpush  *fake.WebPush
	vapidKey string
	// subs maps a user to their webpush subscription (subscription).
	subs  map[string]string
	env   []string
	dir   string
	procs []*hushProc
	http  *http.Client
	// owners maps a fan-out job's device tokens to their users (fanoutJobs).
	owners map[string]string
}

// hushProc is one running hush serve.
type hushProc struct {
	name    string
	addr    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
}

func startCluster(t *testing.T, o clusterOptions) *cluster {
	t.Helper()
	needBinary(t)
	c := &cluster{t: t, opts: o, dir: t.TempDir(), http: &http.Client{Timeout: 10 * time.Second}}
	redisEnv := ""
	if o.redisMasters > 0 {
		c.rc = redistest.StartCluster(t, o.redisMasters)
		c.rdb = c.rc.Client(t)
		redisEnv = "HUSH_REDIS_CLUSTER_ADDRS=" + strings.Join(c.rc.Addrs(), ",")
	} else {
		c.redis = redistest.Start(t, redistest.Options{Persist: true})
		if !c.redis.Real() {
			t.Skip("multi-process test: needs a real redis-server")
		}
		c.rdb = c.redis.Client(t)
		redisEnv = "HUSH_REDIS_URL=" + c.redis.URL()
	}
	c.insp = asynq.NewInspectorFromRedisClient(c.rdb)

	var err error
	if c.apns, err = fake.StartAPNs(); err != nil {
		t.Fatalf("fake APNs: %v", err)
	}
	t.Cleanup(c.apns.Close)
	if c.fcm, err = fake.StartFCM(); err != nil {
		t.Fatalf("fake FCM: %v", err)
	}
	t.Cleanup(c.fcm.Close)
	if c.webpush, err = fake.StartWebPush(); err != nil {
		t.Fatalf("fake Web Push: %v", err)
	}
	t.Cleanup(c.webpush.Close)

	keyFile, keyID, teamID, err := fake.WriteAPNsKey(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	c.apns.TrustKey(keyID, publicKey(t, keyFile)) // the fake checks the JWT signatures
	caFile, err := c.apns.WriteCA(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	saFile, err := fake.WriteServiceAccount(c.dir, c.fcm.TokenURL(), e2eProject)
	if err != nil {
		t.Fatal(err)
	}
	webpushCA, err := c.webpush.WriteCA(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	vapid, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	c.vapidKey = vapid.PublicKey()
	r := c.rules()
	// A clean environment: nothing inherited (no REDIS_URL, no
	// GOOGLE_APPLICATION_CREDENTIALS, no HUSH_* of the developer's shell).
	c.env = append([]string{
		"HOME=" + c.dir,
		"TMPDIR=" + c.dir,
		redisEnv,
		"HUSH_THROTTLE_LIMITS=" + fmt.Sprintf("%d/%s", r.n, r.window),
		"HUSH_THROTTLE_MIN_GAP=" + r.gap.String(),
		"HUSH_APNS_KEY_FILE=" + keyFile,
		"HUSH_APNS_KEY_ID=" + keyID,
		"HUSH_APNS_TEAM_ID=" + teamID,
		"HUSH_APNS_TOPIC=" + e2eTopic,
		"HUSH_APNS_ENDPOINT=" + c.apns.URL,
		"HUSH_APNS_CA_FILE=" + caFile,
		"HUSH_FCM_CREDENTIALS_FILE=" + saFile,
		"HUSH_FCM_PROJECT_ID=" + e2eProject,
		"HUSH_FCM_ENDPOINT=" + c.fcm.Endpoint(),
		"HUSH_WEBPUSH_PRIVATE_KEY=" + vapid.PrivateKey(),
		"HUSH_WEBPUSH_PUBLIC_KEY=" + vapid.PublicKey(),
		"HUSH_WEBPUSH_SUBJECT=" + e2eSubject,
		"HUSH_WEBPUSH_CA_FILE=" + webpushCA,
		// The fake listens on 127.0.0.1: the documented test knob.
		"HUSH_WEBPUSH_ORIGINS=public",
		"HUSH_WEBPUSH_PRIVATE_NETWORKS=127.0.0.0/8",
		"HUSH_LOG_FORMAT=json",
		"HUSH_CONCURRENCY=" + strconv.Itoa(o.concurrency),
		"HUSH_MAX_RETRY=" + strconv.Itoa(o.maxRetry),
	}, o.env...)
	// HUSH_E2E_LOG_LEVEL=debug shows every booking, deferral and send in
	// the processes' logs (printed on failure).
	if lvl := os.Getenv("HUSH_E2E_LOG_LEVEL"); lvl != "" {
		c.env = append(c.env, "HUSH_LOG_LEVEL="+lvl)
	}

	for i := range o.procs {
		c.procs = append(c.procs, c.startProc(fmt.Sprintf("hush-%d", i)))
	}
	for _, p := range c.procs {
		c.waitReady(p)
	}
	return c
}

// rules are the limiter rules the processes run with.
func (c *cluster) rules() rules {
	if c.opts.rules != nil {
		return *c.opts.rules
	}
	return e2eRules
}

// subscription is user's webpush device token: a subscription the fake
// push service made, as a browser would, for the processes' VAPID key.
func (c *cluster) subscription(user string) string {
	c.t.Helper()
	if tok, ok := c.subs[user]; ok {
		return tok
	}
	tok, err := c.webpush.Subscribe(c.vapidKey)
	if err != nil {
		c.t.Fatalf("subscribe %s: %v", user, err)
	}
	if c.subs == nil {
		c.subs = make(map[string]string)
	}
	c.subs[user] = tok
	return tok
}

// publicKey reads the public half of an APNs .p8 key.
func publicKey(t *testing.T, keyFile string) *ecdsa.PublicKey {
	t.Helper()
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", keyFile)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", keyFile, err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		t.Fatalf("%s: %T, want an ECDSA key", keyFile, k)
	}
	return &ec.PublicKey
}

// startProc starts one hush serve, its output in a file whose tail is
// logged when the test fails. It listens on a port the kernel picks
// (HUSH_HTTP_ADDR=127.0.0.1:0), which waitReady reads from its log: a port
// found free beforehand can be taken by another test before hush binds it.
func (c *cluster) startProc(name string) *hushProc {
	t := c.t
	t.Helper()
	p := &hushProc{
		name:    name,
		addr:    "127.0.0.1:0",
		logPath: filepath.Join(c.logDir(), name+".log"),
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(hushBin, "serve")
	p.cmd.Env = append(append([]string(nil), c.env...), "HUSH_HTTP_ADDR="+p.addr)
	p.cmd.Stdout = logFile
	p.cmd.Stderr = logFile
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("--- last lines of %s (%s, exit: %v; whole log: %s) ---\n%s", p.name, p.addr, p.waitErr, p.logPath, tail(p.logPath, 40))
		}
	})
	return p
}

// logDir is where process logs go: HUSH_E2E_LOG_DIR/<test> when set (kept
// after the test, for digging), else the test's temporary directory.
func (c *cluster) logDir() string {
	d := os.Getenv("HUSH_E2E_LOG_DIR")
	if d == "" {
		return c.dir
	}
	d = filepath.Join(d, strings.ReplaceAll(c.t.Name(), "/", "_"))
	if err := os.MkdirAll(d, 0o755); err != nil {
		c.t.Fatal(err)
	}
	return d
}

// stop ends the process gracefully (SIGTERM), killing it if it hangs.
func (p *hushProc) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30s of SIGTERM; killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *hushProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.exited
}

func (p *hushProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitReady learns the process's address from its log, then polls
// /readyz until it answers 200.
func (c *cluster) waitReady(p *hushProc) {
	t := c.t
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		if !p.alive() {
			t.Fatalf("%s exited before it was ready (%v):\n%s", p.name, p.waitErr, tail(p.logPath, 40))
		}
		if strings.HasSuffix(p.addr, ":0") {
			p.addr = cmp.Or(listeningAddr(p.logPath), p.addr)
		}
		if strings.HasSuffix(p.addr, ":0") {
			last = `no "http listening" line in its log yet`
		} else if resp, err := c.http.Get("http://" + p.addr + "/readyz"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 30s (last answer: %s):\n%s", p.name, last, tail(p.logPath, 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listeningAddr returns the address of hush serve's "http listening" line
// in its JSON log, or "" when there is none yet.
func listeningAddr(logPath string) string {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for line := range bytes.Lines(b) {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == "http listening" {
			return l.Addr
		}
	}
	return ""
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// apiResponse is one answer of the HTTP API.
type apiResponse struct {
	Status int
	Body   []byte
}

// do sends one API request to process p; token, when set, is the bearer.
func (c *cluster) do(p *hushProc, method, path string, body []byte, token string) (apiResponse, error) {
	req, err := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(body))
	if err != nil {
		return apiResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return apiResponse{}, fmt.Errorf("%s %s on %s: %w", method, path, p.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return apiResponse{resp.StatusCode, b}, err
}

// submit POSTs the jobs, spread round-robin over the given processes, eight
// at a time, and fails the test unless each is accepted (202).
func (c *cluster) submit(jobs []payload.Job, to []*hushProc, token string) {
	t := c.t
	t.Helper()
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(jobs))
	var wg sync.WaitGroup
	for i, job := range jobs {
		p := to[i%len(to)]
		body, err := json.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := c.do(p, http.MethodPost, "/v1/notifications", body, token)
			if err == nil && r.Status != http.StatusAccepted {
				err = fmt.Errorf("POST job %s to %s: %d %s", job.ID, p.name, r.Status, r.Body)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		t.Fatalf("submitting %d jobs: %v", len(jobs), err)
	}
}

// submitBatches POSTs the jobs size at a time to
// /v1/notifications:batch, spread round-robin over the given processes,
// and fails the test unless every job is accepted (status 202 in its
// answer).
func (c *cluster) submitBatches(jobs []payload.Job, to []*hushProc, token string, size int) {
	t := c.t
	t.Helper()
	var all []error
	for k, from := 0, 0; from < len(jobs); k, from = k+1, from+size {
		part := jobs[from:min(from+size, len(jobs))]
		p := to[k%len(to)]
		body, err := json.Marshal(map[string][]payload.Job{"jobs": part})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.do(p, http.MethodPost, "/v1/notifications:batch", body, token)
		if err == nil && r.Status != http.StatusOK {
			err = fmt.Errorf("POST batch to %s: %d %s", p.name, r.Status, r.Body)
		}
		if err != nil {
			all = append(all, err)
			continue
		}
		var answer struct {
			Results []struct {
				Status int    `json:"status"`
				ID     string `json:"id"`
			} `json:"results"`
		}
		if err := json.Unmarshal(r.Body, &answer); err != nil || len(answer.Results) != len(part) {
			all = append(all, fmt.Errorf("batch answer from %s: %v, %d results for %d jobs: %s", p.name, err, len(answer.Results), len(part), r.Body))
			continue
		}
		for i, a := range answer.Results {
			if a.Status != http.StatusAccepted || a.ID != part[i].ID {
				all = append(all, fmt.Errorf("job %s in a batch to %s: %d %s", part[i].ID, p.name, a.Status, a.ID))
			}
		}
	}
	if err := errors.Join(all...); err != nil {
		t.Fatalf("submitting %d jobs in batches: %v", len(jobs), err)
	}
}

// queueLoad is the number of tasks not yet finished in any queue (pending,
// active, scheduled, retry) and the number archived.
func (c *cluster) queueLoad() (open, archived int, err error) {
	queues, err := c.insp.Queues()
	if err != nil {
		return 0, 0, err
	}
	for _, q := range queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			return 0, 0, err
		}
		open += info.Pending + info.Active + info.Scheduled + info.Retry + info.Aggregating
		archived += info.Archived
	}
	return open, archived, nil
}

// archivedErrors lists the archived tasks of every queue with their last
// error, for failure messages.
func (c *cluster) archivedErrors() []string {
	var out []string
	queues, _ := c.insp.Queues()
	for _, q := range queues {
		tasks, _ := c.insp.ListArchivedTasks(q, asynq.PageSize(50))
		for _, ti := range tasks {
			out = append(out, fmt.Sprintf("%s %s %s: %s", q, ti.Type, ti.ID, ti.LastErr))
		}
	}
	return out
}

// waitFor polls cond every 200 ms until it returns true, failing the test
// at the deadline with the last progress message cond returned.
func (c *cluster) waitFor(what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t := c.t
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, progress := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within %s: %s", what, timeout, progress)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitDrained waits until every expected push arrived with a 200 and no task
// is left in any queue (so late duplicates, e.g. from a dead process's
// recovered leases, have had their chance to show).
func (c *cluster) waitDrained(want []push, timeout time.Duration) time.Duration {
	var idleSince time.Time
	return c.waitFor("deliveries", timeout, func() (bool, string) {
		// Cheap first: while the fakes have not even seen as many requests
		// as there are pushes, skip the full analysis (copying and parsing
		// every recorded body), which would steal CPU from the processes
		// whose timing is under test.
		if n := c.accepted(); n < len(want) {
			open, archived, err := c.queueLoad()
			if err == nil && open == 0 {
				idleSince = time.Time{}
			} else {
				return false, fmt.Sprintf("%d requests at the fakes for %d pushes, %d tasks open, %d archived (queue error: %v)", n, len(want), open, archived, err)
			}
		}
		got := delivered(c.arrivals())
		missing := 0
		for _, w := range want {
			if got[w] == 0 {
				missing++
			}
		}
		open, archived, err := c.queueLoad()
		progress := fmt.Sprintf("%d of %d pushes delivered, %d tasks open, %d archived (queue error: %v)",
			len(want)-missing, len(want), open, archived, err)
		// No task left anywhere but pushes missing: they are lost, no need
		// to wait for the deadline (a few seconds' grace for the fakes to
		// record the last answers).
		switch {
		case err != nil || open > 0 || missing == 0:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) > 3*time.Second:
			c.t.Fatalf("deliveries: the queues are empty but pushes are missing: %s; archived: %s", progress, head(c.archivedErrors(), 5))
		}
		return missing == 0 && open == 0 && err == nil, progress
	})
}

// accepted is how many requests the fakes accepted (cheap: no copy).
func (c *cluster) accepted() int {
	a, _ := c.apns.Counts()
	f, _ := c.fcm.Counts()
	w, _ := c.webpush.Counts()
	return a + f + w
}

// jobStatus reads GET /v1/notifications/{id} from process p.
func (c *cluster) jobStatus(p *hushProc, id, token string) (map[string]any, error) {
	r, err := c.do(p, http.MethodGet, "/v1/notifications/"+id, nil, token)
	if err != nil {
		return nil, err
	}
	if r.Status != http.StatusOK {
		return nil, fmt.Errorf("GET job %s: %d %s", id, r.Status, r.Body)
	}
	var m map[string]any
	return m, json.Unmarshal(r.Body, &m)
}

// events reads the hush:events stream.
func (c *cluster) events(ctx context.Context) ([]map[string]any, error) {
	msgs, err := c.rdb.XRange(ctx, "hush:events", "-", "+").Result()
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Values)
	}
	return out, nil
}
