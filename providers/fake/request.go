package fake

import (
	"net/http"
	"slices"
	"sync"
	"time"
)

// Request is one request a fake accepted (it passed authentication).
type Request struct {
	// Token is the device token (APNs: from the path; FCM: message.token).
	Token string
	// Path is the request path (FCM: /v1/projects/<project>/messages:send).
	Path   string
	Header http.Header
	Body   []byte
	// At is when the request reached the handler.
	At time.Time
	// Status is the HTTP status the fake answered (or was to answer).
	Status int
	// Answered is when the fake's answer was written and flushed to a
	// client still waiting for it; zero when the client went away first
	// (a cancelled request: the sender never learnt the outcome, and the
	// fake does not count it as a push).
	Answered time.Time
}

// Pushed reports whether the request is a push that reached the device: a
// 200 (a Web Push service's 201) answered to a client that was still waiting for it.
func (r Request) Pushed() bool {
	return (r.Status == http.StatusOK || r.Status == http.StatusCreated) && !r.Answered.IsZero()
}

// recorder holds a fake's scripts and its record of accepted requests.
type recorder struct {
	mu       sync.Mutex
	scripts  map[string][]Answer
	fallback []Answer
	reqs     []Request
	gen      int // bumped by reset and setRecording, so stale tickets are ignored
	off      bool
	accepted int
	rejected int
}

func newRecorder() *recorder {
	return &recorder{scripts: make(map[string][]Answer), fallback: []Answer{OK()}}
}

// script sets token's answers; the last one repeats. An empty token sets the
// answers for tokens without a script of their own.
func (r *recorder) script(token string, answers []Answer) {
	if len(answers) == 0 {
		answers = []Answer{OK()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if token == "" {
		r.fallback = slices.Clone(answers)
		return
	}
	r.scripts[token] = slices.Clone(answers)
}

// ticket names a recorded request, for answered.
type ticket struct{ gen, i int }

// take pops token's next answer and records req with the status the answer
// renders to (status maps the answer to the fake's HTTP status).
func (r *recorder) take(req Request, status func(Answer) int) (Answer, ticket) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := pop(r.scripts, req.Token, &r.fallback)
	r.accepted++
	if r.off {
		return a, ticket{gen: -1}
	}
	req.Status = status(a)
	r.reqs = append(r.reqs, req)
	return a, ticket{gen: r.gen, i: len(r.reqs) - 1}
}

// answered records the instant as the request's Answered, then flushes
// the answer written to w. Handlers defer it once the answer's latency has
// passed with the client still there (Answer.begin): a client may hang up
// as soon as it has the status (hush reads no body of a 2xx), which does
// not undo the answer. The record comes first, so a client that has its
// answer finds it in Requests.
func (r *recorder) answered(tk ticket, w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	r.mu.Lock()
	if tk.gen == r.gen && tk.i < len(r.reqs) {
		r.reqs[tk.i].Answered = at
	}
	r.mu.Unlock()
	_ = http.NewResponseController(w).Flush()
}

func pop(scripts map[string][]Answer, token string, fallback *[]Answer) Answer {
	q, ok := scripts[token]
	if !ok {
		q = *fallback
	}
	a := q[0]
	if len(q) > 1 {
		if ok {
			scripts[token] = q[1:]
		} else {
			*fallback = q[1:]
		}
	}
	return a
}

func (r *recorder) reject() {
	r.mu.Lock()
	r.rejected++
	r.mu.Unlock()
}

func (r *recorder) requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Request, len(r.reqs))
	for i, q := range r.reqs {
		q.Header = q.Header.Clone()
		q.Body = slices.Clone(q.Body)
		out[i] = q
	}
	return out
}

func (r *recorder) setRecording(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.off = !on
	if !on {
		r.reqs = nil
		r.gen++
	}
}

func (r *recorder) counts() (accepted, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted, r.rejected
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = nil
	r.gen++
	r.accepted, r.rejected = 0, 0
}
