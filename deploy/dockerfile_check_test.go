package deploy

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// Rules the Dockerfile must keep (issue 6).
const (
	ruleStages      rule = "a multi-stage build (at least two stages)"
	ruleBase        rule = "the final stage's base is distroless (not :debug) or scratch"
	ruleUser        rule = "the final stage sets a non-root USER"
	ruleHealthcheck rule = "no HEALTHCHECK (Kubernetes probes do that)"
	ruleRemoteAdd   rule = "no ADD of a remote URL"
	ruleVersionArg  rule = "ARG VERSION reaches go build as -X main.version=${VERSION}"
	ruleCGO         rule = "go build runs with CGO_ENABLED=0"
	ruleGoBuild     rule = "exactly one RUN go build"
)

// versionSymbol is the variable -X must set from ARG VERSION.
const versionSymbol = "main.version"

// argMark stands in for the value of an ARG while words are expanded, so
// the checks can tell ${VERSION} from a literal.
func argMark(name string) string { return "\x00ARG:" + name + "\x00" }

// goBuild is the RUN instruction that builds the binary, as the shell would
// see it.
type goBuild struct {
	stage   int
	env     map[string]string // ENV and ARG (as argMark) in effect, then inline assignments
	ldflags map[string]string // -X symbol=value
}

// dockerfileReport is what checkDockerfile found.
type dockerfileReport struct {
	violations []violation
	build      *goBuild // nil when no single go build was found
}

// checkDockerfile parses src with BuildKit's own parser and checks it
// against the rules above. It returns an error only when src does not parse.
func checkDockerfile(src []byte) (dockerfileReport, error) {
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return dockerfileReport{}, fmt.Errorf("parse: %w", err)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return dockerfileReport{}, fmt.Errorf("instructions: %w", err)
	}
	lex := shell.NewLex(res.EscapeToken)
	var meta []string
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			if kv.Value != nil {
				meta = append(meta, kv.Key+"="+*kv.Value)
			}
		}
	}
	expandMeta := func(word string) string {
		out, _, err := lex.ProcessWord(word, shell.EnvsFromSlice(meta))
		if err != nil {
			return word
		}
		return out
	}

	c := &checker{}
	if len(stages) < 2 {
		c.errorf(ruleStages, "%d stage(s)", len(stages))
	}
	if len(stages) == 0 {
		return dockerfileReport{violations: c.found}, nil
	}
	final := len(stages) - 1

	base := finalBase(stages, expandMeta)
	if !isMinimalBase(base) {
		c.errorf(ruleBase, "final stage builds on %q", base)
	}

	var user string
	for i, st := range stages {
		for _, cmd := range st.Commands {
			switch cmd := cmd.(type) {
			case *instructions.UserCommand:
				if i == final {
					user = expandMeta(cmd.User)
				}
			case *instructions.HealthCheckCommand:
				c.errorf(ruleHealthcheck, "stage %d: %s", i, cmd)
			case *instructions.AddCommand:
				for _, p := range cmd.SourcePaths {
					if isRemote(expandMeta(p)) {
						c.errorf(ruleRemoteAdd, "stage %d: ADD %s", i, p)
					}
				}
			}
		}
	}
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "0" || name == "root" {
		c.errorf(ruleUser, "final stage USER %q", user)
	}

	builds := findGoBuilds(stages, lex)
	if len(builds) != 1 {
		c.errorf(ruleGoBuild, "found %d RUN go build", len(builds))
		return dockerfileReport{violations: c.found}, nil
	}
	b := builds[0]
	if b.env["CGO_ENABLED"] != "0" {
		c.errorf(ruleCGO, "CGO_ENABLED is %q in go build's environment", b.env["CGO_ENABLED"])
	}
	if got, want := b.ldflags[versionSymbol], argMark("VERSION"); got != want {
		c.errorf(ruleVersionArg, "-X %s=%q, want it set from an ARG VERSION of the build stage", versionSymbol, strings.ReplaceAll(got, "\x00", ""))
	}
	return dockerfileReport{violations: c.found, build: &b}, nil
}

// finalBase follows the final stage's FROM through earlier stages to an
// image name.
func finalBase(stages []instructions.Stage, expand func(string) string) string {
	base := expand(stages[len(stages)-1].BaseName)
	for range stages { // at most one hop per stage: no loop forever
		i := slices.IndexFunc(stages, func(s instructions.Stage) bool { return s.Name != "" && strings.EqualFold(s.Name, base) })
		if i < 0 {
			break
		}
		base = expand(stages[i].BaseName)
	}
	return base
}

func isMinimalBase(image string) bool {
	if image == "scratch" {
		return true
	}
	repo, tag, _ := strings.Cut(image, ":")
	return strings.HasPrefix(repo, "gcr.io/distroless/") && !strings.Contains(tag, "debug")
}

// isRemote reports whether an ADD source is fetched over the network.
func isRemote(src string) bool {
	for _, p := range []string{"http://", "https://", "git://", "git@", "ssh://"} {
		if strings.HasPrefix(strings.ToLower(src), p) {
			return true
		}
	}
	return false
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// findGoBuilds returns every "go build" run by a RUN instruction, with the
// environment it runs in and the -X flags it passes.
func findGoBuilds(stages []instructions.Stage, lex *shell.Lex) []goBuild {
	var out []goBuild
	for i, st := range stages {
		env := map[string]string{}
		getter := func() shell.EnvGetter {
			var kv []string
			for k, v := range env {
				kv = append(kv, k+"="+v)
			}
			return shell.EnvsFromSlice(kv)
		}
		for _, cmd := range st.Commands {
			switch cmd := cmd.(type) {
			case *instructions.ArgCommand:
				for _, kv := range cmd.Args {
					env[kv.Key] = argMark(kv.Key)
					if kv.Value != nil && kv.Key == "CGO_ENABLED" {
						env[kv.Key] = *kv.Value
					}
				}
			case *instructions.EnvCommand:
				for _, kv := range cmd.Env {
					v, _, err := lex.ProcessWord(kv.Value, getter())
					if err != nil {
						v = kv.Value
					}
					env[kv.Key] = v
				}
			case *instructions.RunCommand:
				words := cmd.CmdLine
				if cmd.PrependShell {
					var err error
					if words, err = lex.ProcessWords(strings.Join(cmd.CmdLine, " "), getter()); err != nil {
						continue
					}
				}
				for j := 0; j+1 < len(words); j++ {
					if path.Base(words[j]) != "go" || words[j+1] != "build" {
						continue
					}
					b := goBuild{stage: i, env: map[string]string{}, ldflags: map[string]string{}}
					for k, v := range env {
						b.env[k] = v
					}
					for k := j - 1; k >= 0 && assignment.MatchString(words[k]); k-- {
						name, value, _ := strings.Cut(words[k], "=")
						b.env[name] = value
					}
					for k := j + 2; k < len(words); k++ {
						var flags string
						switch {
						case words[k] == "-ldflags" || words[k] == "--ldflags":
							if k+1 < len(words) {
								flags = words[k+1]
							}
						case strings.HasPrefix(words[k], "-ldflags="):
							flags = strings.TrimPrefix(words[k], "-ldflags=")
						}
						fields := strings.Fields(flags)
						for f := 0; f+1 < len(fields); f++ {
							if fields[f] == "-X" {
								sym, val, _ := strings.Cut(fields[f+1], "=")
								b.ldflags[sym] = val
							}
						}
					}
					out = append(out, b)
				}
			}
		}
	}
	return out
}
