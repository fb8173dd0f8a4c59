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
	// Status is the HTTP status the fake answered.
	Status int
}

// recorder holds a fake's scripts and its record of accepted requests.
type recorder struct {
	mu       sync.Mutex
	scripts  map[string][]Answer
	fallback []Answer
	reqs     []Request
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

// take pops token's next answer and records req with the status the answer
// renders to (status maps the answer to the fake's HTTP status).
func (r *recorder) take(req Request, status func(Answer) int) Answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := pop(r.scripts, req.Token, &r.fallback)
	r.accepted++
	if !r.off {
		req.Status = status(a)
		r.reqs = append(r.reqs, req)
	}
	return a
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
	r.accepted, r.rejected = 0, 0
}
