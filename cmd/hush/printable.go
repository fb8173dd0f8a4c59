package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable writes to w with every control character but newline and tab
// shown as an escape (\x1b, \u009b) and every invalid UTF-8 byte as \xNN:
// what a server answers reaches a terminal, which would act on an escape
// sequence inside a job id or an error message.
type printable struct{ w io.Writer }

func (p printable) Write(b []byte) (int, error) {
	s := string(b)
	if !needsEscape(s) {
		return p.w.Write(b)
	}
	if _, err := io.WriteString(p.w, escapeControls(s)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func needsEscape(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, isEscaped)
}

func isEscaped(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }

// escapeControls is s with the runes isEscaped reports and invalid UTF-8
// bytes written as Go escapes.
func escapeControls(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case isEscaped(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isEscaped(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
