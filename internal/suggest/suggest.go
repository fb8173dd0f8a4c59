// Package suggest finds the known name nearest a mistyped one, for the
// "did you mean" of hush's messages: an apps file's fields, the HUSH_*
// keys, the subcommands. It imports the standard library only.
package suggest

import "strings"

// Nearest returns the name of names nearest word: the closest within two
// edits (a swap of two neighbours counts as one), else, for a word of four
// letters or more, the first name that begins with it; "" when none is
// near. Ties go to the earlier name.
func Nearest(word string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(word, n); d < bestD {
			best, bestD = n, d
		}
	}
	for _, n := range names {
		if best == "" && len(word) >= 4 && strings.HasPrefix(n, word) {
			best = n
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, counting a swap of
// two neighbours as one edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
