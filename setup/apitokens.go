package setup

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hushpush/hush/payload"
)

// apiTokensKey is the key of the tokens that act for some apps only.
const apiTokensKey = "HUSH_API_TOKENS"

// apiTokens reads HUSH_API_TOKENS: space separated items
// APP[,APP...]:TOKEN, each token with the apps it acts for (app names hold
// no ":", so the token is everything after the first one). A token given
// twice, or the same as HUSH_API_TOKEN, is refused. Errors name an item by
// its place, never by its token.
func (c Config) apiTokens() (map[string][]string, error) {
	out := map[string][]string{}
	for i, item := range strings.Fields(c.APITokens) {
		at := fmt.Sprintf("item %d", i+1)
		apps, token, ok := strings.Cut(item, ":")
		if !ok || apps == "" || token == "" {
			return nil, keyErr(apiTokensKey, "%s: want APP[,APP...]:TOKEN", at)
		}
		if err := tokenBytes(token); err != nil {
			return nil, keyErr(apiTokensKey, "%s: %w", at, err)
		}
		for _, app := range strings.Split(apps, ",") {
			if !payload.ValidApp(app) {
				return nil, keyErr(apiTokensKey, "%s: app %q: want 1 to %d of a-z, 0-9, _ and -", at, app, payload.MaxAppBytes)
			}
		}
		switch _, dup := out[token]; {
		case dup:
			return nil, keyErr(apiTokensKey, "%s: its token is also an earlier item's: give each token once, with all its apps", at)
		case token == c.APIToken:
			return nil, keyErr(apiTokensKey, "%s: its token is HUSH_API_TOKEN, which acts for every app", at)
		}
		out[token] = strings.Split(apps, ",")
	}
	return out, nil
}

// tokenGrants are the tokens that act for some apps only, each with its
// apps: HUSH_API_TOKENS's and the apps file's api_tokens (a token listed
// under several apps acts for each). cfg is valid. An app that
// HUSH_API_TOKENS names and specs do not have is an error naming the key.
func tokenGrants(cfg Config, specs []appSpec) (map[string][]string, error) {
	out, _ := cfg.apiTokens() // checked by Validate
	names := map[string]bool{}
	for _, a := range specs {
		names[a.name] = true
	}
	for _, token := range slices.Sorted(maps.Keys(out)) {
		for _, app := range out[token] {
			if !names[app] {
				return nil, keyErr(apiTokensKey, "a token names the app %q, which is not configured (the apps: %s)", app, strings.Join(slices.Sorted(maps.Keys(names)), ", "))
			}
		}
	}
	for _, a := range specs {
		for _, token := range a.apiTokens {
			if !slices.Contains(out[token], a.name) {
				out[token] = append(out[token], a.name)
			}
		}
	}
	return out, nil
}

// fileTokens checks an app's api_tokens at path: each one a token a
// client can send, given once, and not HUSH_API_TOKEN. Problems name a
// token by its place in the list, never by its value.
func fileTokens(path string, tokens []string, cfg Config, ps *problems) []string {
	seen := map[string]int{}
	for i, token := range tokens {
		at := fmt.Sprintf("%s[%d]", path, i)
		if j, dup := seen[token]; dup {
			ps.addf(at, ps.lines[path], "the same token as %s[%d]: give it once", path, j)
			continue
		}
		seen[token] = i
		switch {
		case token == "":
			ps.addf(at, ps.lines[path], "empty: a token is 1 or more visible ASCII characters")
		case token == cfg.APIToken:
			ps.addf(at, ps.lines[path], "the same as HUSH_API_TOKEN, which acts for every app")
		default:
			if err := tokenBytes(token); err != nil {
				ps.add(at, ps.lines[path], err)
			}
		}
	}
	return tokens
}
