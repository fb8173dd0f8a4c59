package main

import (
	"flag"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// helpCase is one command line that prints a help.
type helpCase struct {
	name string
	args []string
	// code is the exit status: 0 after --help, 2 when a command line that
	// is not complete prints the help on stderr.
	code int
	// flags are the flags the help must list (nil: none).
	flags *flag.FlagSet
	// commands are the subcommands it must list.
	commands []command
}

// helpCases are every help hush prints, found from the command table (a
// command added to it is covered with no change here): hush's own, each
// command's by --help and by hush help, and a command group's, bare and
// for each of its subcommands.
func helpCases() []helpCase {
	top := append(commands(), command{name: "help"})
	cases := []helpCase{
		{"--help", []string{"--help"}, 0, nil, top},
		{"-h", []string{"-h"}, 0, nil, top},
		{"help", []string{"help"}, 0, nil, top},
		{"bare", nil, 2, nil, top},
	}
	for _, c := range commands() {
		var subs []command
		if c.subcommands != nil {
			subs = c.subcommands()
		}
		cases = append(cases,
			helpCase{c.name + " --help", []string{c.name, "--help"}, 0, c.flags(), subs},
			helpCase{"help " + c.name, []string{"help", c.name}, 0, c.flags(), subs})
		if subs == nil {
			continue
		}
		cases = append(cases, helpCase{c.name + " bare", []string{c.name}, 2, c.flags(), subs})
		for _, s := range subs {
			cases = append(cases, helpCase{c.name + " " + s.name + " --help", []string{c.name, s.name, "--help"}, 0, s.flags(), nil})
		}
	}
	return cases
}

// TestEveryHelp: every help lists every flag of the command's flag set and
// every subcommand of a group, has no empty Flags section, and is wrapped
// to $COLUMNS (a line may be longer only to hold one word).
func TestEveryHelp(t *testing.T) {
	flagsHeading := regexp.MustCompile(`^Flags\b.*:$`)
	for _, columns := range []string{"60", ""} {
		t.Run("COLUMNS="+columns, func(t *testing.T) {
			t.Setenv("COLUMNS", columns)
			width := 80
			if columns != "" {
				width, _ = strconv.Atoi(columns)
			}
			for _, tc := range helpCases() {
				t.Run(tc.name, func(t *testing.T) {
					stdout, stderr, code := runCmd(t, tc.args...)
					if code != tc.code {
						t.Fatalf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr)
					}
					out := stdout
					if tc.code != 0 {
						out = stderr
					}
					if !strings.Contains(out, "Usage") {
						t.Errorf("no Usage:\n%s", out)
					}
					if tc.flags != nil {
						tc.flags.VisitAll(func(f *flag.Flag) {
							if !regexp.MustCompile(`(?m)^ +--?` + regexp.QuoteMeta(f.Name) + `( |=|$)`).MatchString(out) {
								t.Errorf("does not list -%s:\n%s", f.Name, out)
							}
						})
					}
					for _, c := range tc.commands {
						if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.name) + ` +\S`).MatchString(out) {
							t.Errorf("does not list the subcommand %s:\n%s", c.name, out)
						}
					}
					lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
					for i, line := range lines {
						if n := len([]rune(line)); n > width && len(strings.Fields(strings.TrimSuffix(line, " \\"))) > 1 {
							t.Errorf("line %d has %d runes, more than %d:\n%s", i+1, n, width, line)
						}
						if !flagsHeading.MatchString(line) {
							continue
						}
						if tc.flags == nil || numFlags(tc.flags) == 0 {
							t.Errorf("a %q section, but the command has no flags:\n%s", line, out)
						} else if i+1 == len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "-") {
							t.Errorf("an empty %q section:\n%s", line, out)
						}
					}
				})
			}
		})
	}
}

func TestWrapHelp(t *testing.T) {
	tests := []struct {
		name  string
		width int
		text  string
		want  string
	}{
		{"fits: as written", 40,
			"Short lines stay\nas they are.\n  hush send -f job.json\n",
			"Short lines stay\nas they are.\n  hush send -f job.json\n"},
		{"prose: one paragraph", 30,
			"A paragraph of prose is reflowed as one\nwhen a line is too long.\n\nNext one.\n",
			"A paragraph of prose is\nreflowed as one when a line is\ntoo long.\n\nNext one.\n"},
		{"comment keeps its #", 30,
			"  # a comment on two lines that is\n  # too long\n",
			"  # a comment on two lines\n  # that is too long\n"},
		{"example continues with a backslash", 44,
			"  hush send --user u-42 --body \"Order 4711 is on its way\" --silent\n",
			"  hush send --user u-42 --body \\\n      \"Order 4711 is on its way\" --silent\n"},
		{"example continued by hand", 40,
			"  A=1 B=2 \\\n    C=3 hush serve --with a long tail of words\n",
			"  A=1 B=2 C=3 hush serve --with a long \\\n      tail of words\n"},
		{"redirection stays with its file", 30,
			"  hush simulate --generate 100 > trace.csv\n",
			"  hush simulate --generate \\\n      100 > trace.csv\n"},
		{"synopsis under its first argument", 40,
			"Usage:\n  hush demo [--limits N/W,...] [--min-gap D] [-v]\n",
			"Usage:\n  hush demo [--limits N/W,...]\n            [--min-gap D] [-v]\n"},
		{"table row hangs at its column", 30,
			"  term   a description that goes\n         on under it\n  next   short\n",
			"  term   a description that\n         goes on under it\n  next   short\n"},
		{"indented lines keep quoted words", 25,
			"   {\"body\": \"on its way\", \"x\": 1}\n",
			"   {\"body\": \"on its way\",\n   \"x\": 1}\n"},
		{"a long word stands alone", 10,
			"a incomprehensibilities b\n",
			"a\nincomprehensibilities\nb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, wrapHelp(tt.text, tt.width)); diff != "" {
				t.Errorf("wrapHelp (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelpWidth(t *testing.T) {
	for _, tt := range []struct {
		columns string
		want    int
	}{{"", 80}, {"x", 80}, {"120", 120}, {"60", 60}, {"12", 40}} {
		t.Setenv("COLUMNS", tt.columns)
		if got := helpWidth(); got != tt.want {
			t.Errorf("COLUMNS=%q: helpWidth() = %d, want %d", tt.columns, got, tt.want)
		}
	}
}
