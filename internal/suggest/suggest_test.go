package suggest

import "testing"

func TestNearest(t *testing.T) {
	keys := []string{"HUSH_THROTTLE_LIMITS", "HUSH_THROTTLE_MIN_GAP", "HUSH_CONCURRENCY", "HUSH_HTTP_ADDR"}
	commands := []string{"serve", "send", "cancel", "throttle", "apps"}
	tests := []struct {
		name, word string
		names      []string
		want       string
	}{
		{"one letter missing", "HUSH_THROTLE_LIMITS", keys, "HUSH_THROTTLE_LIMITS"},
		{"two letters off", "HUSH_CONCURENCY_", keys, "HUSH_CONCURRENCY"},
		{"swapped neighbours", "sned", commands, "send"},
		{"closest wins", "serv", commands, "serve"},
		{"prefix of a long name", "thro", commands, "throttle"},
		{"short prefix is not enough", "th", commands, ""},
		{"nothing near", "HUSH_REDIS_ADDR", keys, ""},
		{"exact", "cancel", commands, "cancel"},
		{"no names", "x", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Nearest(tt.word, tt.names); got != tt.want {
				t.Errorf("Nearest(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}
