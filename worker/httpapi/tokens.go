package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// Tokens are the bearer tokens the API takes besides Options.Token, each
// for every app or for some of them. Set replaces them while the API
// serves (setup does on an apps reload). Safe for concurrent use.
type Tokens struct {
	cur atomic.Pointer[[]tokenEntry]
}

// tokenEntry is one token, kept as its SHA-256 digest, so that comparing
// takes the same time whatever its length.
type tokenEntry struct {
	digest [sha256.Size]byte
	apps   []string // nil: every app
}

// NewTokens returns the tokens byToken names, each with the apps it may
// act for (nil or empty: every app).
func NewTokens(byToken map[string][]string) *Tokens {
	t := &Tokens{}
	t.Set(byToken)
	return t
}

// Set replaces the tokens with byToken's.
func (t *Tokens) Set(byToken map[string][]string) {
	entries := make([]tokenEntry, 0, len(byToken))
	for tok, apps := range byToken {
		e := tokenEntry{digest: sha256.Sum256([]byte(tok))}
		if len(apps) > 0 {
			e.apps = slices.Sorted(slices.Values(apps))
		}
		entries = append(entries, e)
	}
	t.cur.Store(&entries)
}

// grant is what token may act for; ok false when it is none of the
// tokens. Every token is compared, in constant time, whichever matches.
func (t *Tokens) grant(token string) (g grant, ok bool) {
	if t == nil {
		return grant{}, false
	}
	d := sha256.Sum256([]byte(token))
	for _, e := range *t.cur.Load() {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			g, ok = grant{apps: e.apps}, true
		}
	}
	return g, ok
}

// grant is what a request's token may act for.
type grant struct {
	apps []string // nil: every app
}

func (g grant) allows(app string) bool { return g.apps == nil || slices.Contains(g.apps, app) }

// limited reports whether the token acts for some apps only.
func (g grant) limited() bool { return g.apps != nil }

type grantKey struct{}

// grantOf is the grant auth put in r's context; every app when the API
// requires no token.
func grantOf(r *http.Request) grant {
	g, _ := r.Context().Value(grantKey{}).(grant)
	return g
}

// forbid answers 403 to a request whose token may not act on what the
// request names: what says what that is, and the answer names the apps
// the token acts for, never the app of a job it may not see.
func forbid(rw http.ResponseWriter, g grant, what string) {
	writeError(rw, http.StatusForbidden, forbidden(g, what))
}

// forbidden is forbid's message.
func forbidden(g grant, what string) string {
	return what + ": this token acts for " + appsText(g.apps) + " only"
}

func appsText(apps []string) string {
	if len(apps) == 1 {
		return "the app " + apps[0]
	}
	return "the apps " + strings.Join(apps, ", ")
}

// authenticator checks a request's bearer token against the all-apps
// token and the Tokens; required false: /v1/ takes any request.
type authenticator struct {
	all      *[sha256.Size]byte // Options.Token's digest; nil: none
	tokens   *Tokens
	required bool
}

func newAuthenticator(o Options) authenticator {
	a := authenticator{tokens: o.Tokens, required: o.Token != "" || o.Tokens != nil}
	if o.Token != "" {
		d := sha256.Sum256([]byte(o.Token))
		a.all = &d
	}
	return a
}

// grant is what the token may act for, ok false when it is not one.
func (a authenticator) grant(token string) (grant, bool) {
	d := sha256.Sum256([]byte(token))
	all := a.all != nil && subtle.ConstantTimeCompare(d[:], a.all[:]) == 1
	g, ok := a.tokens.grant(token)
	if all {
		return grant{}, true
	}
	return g, ok
}

// wrap requires a known bearer token before next and hands next what it
// may act for.
func (a authenticator) wrap(next http.Handler) http.Handler {
	if !a.required {
		return next
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 7235 §2.1); the token is not.
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		token = strings.TrimLeft(token, " ")
		g, ok := a.grant(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" || !ok {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="hush"`)
			writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
	})
}
