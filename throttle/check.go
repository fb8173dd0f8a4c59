package throttle

import (
	"context"
	"fmt"
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
