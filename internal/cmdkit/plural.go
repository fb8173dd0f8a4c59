package cmdkit

import (
	"fmt"
	"strings"
)

// Plural counts a noun: "1 user", "4 users", "5 pushes", "3 masters".
func Plural(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "sh"):
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
