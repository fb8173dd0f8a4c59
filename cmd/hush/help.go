package main

// Help screens: one printer for every command, wrapped to the terminal.

import (
	"flag"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printHelp writes a help: text wrapped to the terminal (wrapHelp), then,
// when fs has flags, every one of them under "Flags:". Every command's
// --help, hush --help and a command group's help go through it.
func printHelp(w io.Writer, text string, fs *flag.FlagSet) {
	width := helpWidth()
	_, _ = io.WriteString(w, wrapHelp(text, width))
	if fs == nil || numFlags(fs) == 0 {
		return
	}
	_, _ = io.WriteString(w, "\nFlags:\n")
	printDefaults(w, fs, width)
}

func numFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}

const (
	// helpWidthDefault is the help's width when $COLUMNS is not a number.
	helpWidthDefault = 80
	// helpWidthMin is the narrowest help: under it, more lines would hold
	// one word than not.
	helpWidthMin = 40
	// flagIndent indents a flag's description under its name, as
	// setup.PrintUsage indents a key's.
	flagIndent = "      "
)

// helpWidth is the width help is wrapped to: $COLUMNS, else 80, and at
// least 40.
func helpWidth() int {
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil {
		return max(c, helpWidthMin)
	}
	return helpWidthDefault
}

// printDefaults writes fs's flags as flag.PrintDefaults words them (name,
// value type, description and default), each description wrapped to width
// under flagIndent instead of after a tab.
func printDefaults(w io.Writer, fs *flag.FlagSet, width int) {
	var defaults strings.Builder
	out := fs.Output()
	fs.SetOutput(&defaults)
	fs.PrintDefaults()
	fs.SetOutput(out)
	var b strings.Builder
	// PrintDefaults writes "  -name type" and "    \tdescription" lines,
	// or "  -x\tdescription" for a one-letter bool.
	for line := range strings.Lines(defaults.String()) {
		head, desc, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if head = strings.TrimRight(head, " "); head != "" {
			b.WriteString(head + "\n")
		}
		if ok && desc != "" {
			for _, l := range fill(strings.Fields(desc), width, flagIndent, flagIndent, "") {
				b.WriteString(l + "\n")
			}
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// wrapHelp reflows help text to width columns. The text is written as it
// should read at 80 columns, and a block of it is reflowed only when one of
// its lines is longer than width:
//
//   - prose, unindented lines up to a blank line, as one paragraph;
//   - "# comment" lines at one indent, each line keeping the "# ";
//   - a command line ("hush ..." or "NAME=value ..."), broken only outside
//     quotes, () and []: an example continues with " \" and four more
//     spaces, so it can still be pasted into a shell; a synopsis (right
//     under "Usage:") continues under its first argument;
//   - a table row ("  term  description", two or more spaces after the
//     term) with the lines under its description, at that column;
//   - other indented lines at one indent (JSON, a key's description), as
//     one paragraph at that indent, broken only outside double quotes.
//
// A word longer than the width stands alone on its line.
func wrapHelp(text string, width int) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var out []string
	synopsis := false // the lines right under "Usage:"
	for i := 0; i < len(lines); {
		line := lines[i]
		ind := indentOf(line)
		body := line[ind:]
		pre := line[:ind]
		// n is how many lines the block takes; only a block with a line
		// too long is reflowed.
		n := 1
		var wrapped []string
		switch {
		case body == "":
			synopsis = false
			wrapped = []string{""}
		case ind == 0:
			n = blockLen(lines[i:], func(l string) bool { return l != "" && indentOf(l) == 0 })
			synopsis = n == 1 && body == "Usage:"
			wrapped = fill(strings.Fields(strings.Join(lines[i:i+n], " ")), width, "", "", "")
		case isComment(body):
			n = blockLen(lines[i:], func(l string) bool { return indentOf(l) == ind && isComment(l[ind:]) })
			var words []string
			for _, l := range lines[i : i+n] {
				words = append(words, strings.Fields(strings.TrimPrefix(l[ind:], "#"))...)
			}
			wrapped = fill(words, width, pre+"# ", pre+"# ", "")
		case isCommand(body):
			// It and the lines a trailing " \" continues it onto, as one.
			for i+n < len(lines) && strings.HasSuffix(lines[i+n-1], " \\") && strings.TrimSpace(lines[i+n]) != "" {
				body = strings.TrimSuffix(body, "\\") + strings.TrimSpace(lines[i+n])
				n++
			}
			wrapped = wrapCommand(pre, body, width, synopsis)
		case tableColumn(body) > 0:
			hang := ind + tableColumn(body)
			n = blockLen(lines[i:], func(l string) bool { return strings.TrimSpace(l) != "" && indentOf(l) == hang })
			cell := strings.Join(lines[i:i+n], " ")[hang:]
			wrapped = fill(splitWords(cell, `"`, false), width, line[:hang], strings.Repeat(" ", hang), "")
		default:
			n = blockLen(lines[i:], func(l string) bool {
				b := l[indentOf(l):]
				return indentOf(l) == ind && b != "" && !isComment(b) && !isCommand(b) && tableColumn(b) == 0
			})
			wrapped = fill(splitWords(strings.Join(lines[i:i+n], " "), `"`, false), width, pre, pre, "")
		}
		if fits(lines[i:i+n], width) {
			wrapped = lines[i : i+n]
		}
		out = append(out, wrapped...)
		i += n
	}
	return strings.Join(out, "\n") + "\n"
}

// wrapCommand breaks one command (body, indented by pre): an example
// continues with " \" on the next line, four spaces further in; a synopsis
// without the backslash, under the command's first argument.
func wrapCommand(pre, body string, width int, synopsis bool) []string {
	body, continued := strings.CutSuffix(body, " \\")
	var words []string
	for _, w := range splitWords(body, `"'`, true) {
		// A redirection stays with its file.
		if n := len(words); n > 0 && (words[n-1] == "<" || words[n-1] == ">") {
			words[n-1] += " " + w
			continue
		}
		words = append(words, w)
	}
	rest, cont := pre+"    ", " \\"
	if synopsis {
		rest, cont = pre+strings.Repeat(" ", len("hush ")+len(words[min(1, len(words)-1)])+1), ""
		// A synopsis is read, not pasted: a group too long for a line
		// may break inside.
		var split []string
		for _, w := range words {
			if runes(rest)+runes(w) > width {
				split = append(split, strings.Fields(w)...)
			} else {
				split = append(split, w)
			}
		}
		words = split
	}
	lines := fill(words, width, pre, rest, cont)
	if continued {
		lines[len(lines)-1] += " \\"
	}
	return lines
}

// fill lays words out, one space apart, in lines of at most width runes:
// the first line starts with first, the others with rest, and every line
// but the last ends with cont. A word too long for a line stands alone.
func fill(words []string, width int, first, rest, cont string) []string {
	var lines []string
	cur, empty := first, true
	for _, w := range words {
		if !empty && runes(cur)+1+runes(w)+runes(cont) > width {
			lines = append(lines, cur+cont)
			cur, empty = rest, true
		}
		if !empty {
			cur += " "
		}
		cur += w
		empty = false
	}
	return append(lines, cur)
}

// splitWords splits s at spaces, but not inside a pair of quotes (any of
// quotes) nor, with brackets, inside () and []. When those do not pair up
// it splits at every space.
func splitWords(s, quotes string, brackets bool) []string {
	var words []string
	var quote rune
	depth, start := 0, -1
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case strings.ContainsRune(quotes, r):
			quote = r
		case brackets && (r == '(' || r == '['):
			depth++
		case brackets && (r == ')' || r == ']') && depth > 0:
			depth--
		case r == ' ' && depth == 0:
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if quote != 0 || depth != 0 {
		return strings.Fields(s)
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words
}

// blockLen counts the lines from the first that belong to its block: the
// first, and those after it for which more is true.
func blockLen(lines []string, more func(string) bool) int {
	n := 1
	for n < len(lines) && more(lines[n]) {
		n++
	}
	return n
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

func isComment(body string) bool { return body == "#" || strings.HasPrefix(body, "# ") }

// isCommand tells a command line from the rest: it runs hush, or sets an
// environment variable for it (HUSH_REDIS_URL=... hush serve).
func isCommand(body string) bool {
	if strings.HasPrefix(body, "hush ") {
		return true
	}
	name, _, ok := strings.Cut(body, "=")
	return ok && name != "" && strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

// tableColumn is where the description of a table row ("term  text")
// starts in body, or 0 when body is not one.
func tableColumn(body string) int {
	i := strings.Index(body, "  ")
	if i < 0 {
		return 0
	}
	j := i + indentOf(body[i:])
	if j == len(body) {
		return 0
	}
	return j
}

func fits(lines []string, width int) bool {
	for _, l := range lines {
		if runes(l) > width {
			return false
		}
	}
	return true
}

func runes(s string) int { return utf8.RuneCountInString(s) }
