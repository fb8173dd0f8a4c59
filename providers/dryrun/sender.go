package dryrun

import (
	"context"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/hushpush/hush/providers"
)

// Sender logs pushes instead of sending them.
type Sender struct {
	log *slog.Logger
}

// New returns a dry-run sender logging to log (slog.Default() when nil).
func New(log *slog.Logger) *Sender {
	if log == nil {
		log = slog.Default()
	}
	return &Sender{log: log}
}

// Send logs p at info level and reports it delivered.
func (s *Sender) Send(ctx context.Context, p providers.Push) providers.Result {
	attrs := []slog.Attr{
		slog.String("push_id", p.ID),
		slog.String("user_id", p.UserID),
		slog.String("platform", string(p.Platform)),
		slog.String("token", ShortToken(p.Token)),
	}
	if c := p.Content; c != nil {
		if c.Alert != nil {
			attrs = append(attrs, slog.String("title", c.Alert.Title), slog.String("body", c.Alert.Body))
		}
		attrs = append(attrs,
			slog.Bool("silent", c.Silent),
			slog.String("priority", string(c.Priority.Effective())),
			slog.Int("data_keys", len(c.Data)))
		if c.CollapseKey != "" {
			attrs = append(attrs, slog.String("collapse_key", c.CollapseKey))
		}
	}
	if !p.Expiry.IsZero() {
		attrs = append(attrs, slog.Time("expiry", p.Expiry.UTC().Truncate(time.Second)))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "dry run: would send push", attrs...)
	return providers.Result{Outcome: providers.Delivered}
}

// ShortToken shortens a device token for logs: its first 8 characters and
// "…"; tokens of 8 characters or fewer are masked entirely.
func ShortToken(token string) string {
	const keep = 8
	if utf8.RuneCountInString(token) <= keep {
		return "…"
	}
	n := 0
	for i := range token {
		if n == keep {
			return token[:i] + "…"
		}
		n++
	}
	return token
}
