package throttle

import (
	"context"
	"fmt"
	"strings"
)

func check(ctx context.Context, user string) error {
	if user == "" {
		return ErrEmptyUser
	}
	return ctx.Err()
}

func checkMember(ctx context.Context, user, member string) error {
	if member == "" {
		return ErrEmptyMember
	}
	return check(ctx, user)
}

func checkUsers(users []string) error {
	for i, u := range users {
		if u == "" {
			return fmt.Errorf("users[%d]: %w", i, ErrEmptyUser)
		}
	}
	return nil
}

func checkRequests(reqs []Request) error {
	for i, q := range reqs {
		switch {
		case q.User == "":
			return fmt.Errorf("requests[%d]: %w", i, ErrEmptyUser)
		case q.Member == "":
			return fmt.Errorf("requests[%d]: %w", i, ErrEmptyMember)
		}
	}
	return nil
}

func checkOptions(o Options) error {
	if o.MaxPending < 0 && o.MaxPending != NoMaxPending {
		return fmt.Errorf("throttle: Options.MaxPending %d: want a cap, 0 for DefaultMaxPending or NoMaxPending (%d)", o.MaxPending, NoMaxPending)
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return fmt.Errorf("throttle: Options.Prefix %q: want no { or }: the braces after it are the user's hash tag", o.Prefix)
	}
	if o.Scope != "" && !ValidCategory(o.Scope) {
		return fmt.Errorf("throttle: Options.Scope %q: want 1 to %d of a-z, 0-9, _ and -", o.Scope, MaxCategoryLen)
	}
	return nil
}

// pendingCap is the cap o.MaxPending stands for, 0 for none.
func pendingCap(o Options) int {
	switch o.MaxPending {
	case 0:
		if mutant("pendingCapOne") {
			return 1
		}
		return DefaultMaxPending
	case NoMaxPending:
		return 0
	}
	return o.MaxPending
}
