package throttle

import "strings"

// userTag is what a user's keys hold between braces, their hash tag, for
// user under scope (Options.Scope, "" for none):
//
//	scope + ":" + user   a scoped user (an app's, or a throttle group's)
//	user                 an unscoped user whose id is plain (plainUser)
//	":" + user           any other unscoped user
//
// No two (scope, user) pairs share a tag: a scope is 1 to 32 of a-z, 0-9,
// _ and -, so a scoped tag starts with a scope and its first ":" ends it;
// a plain id neither starts with ":" nor has a scope before its first ":";
// the third form alone starts with ":". Every tag is non-empty and starts
// with no "}", so Redis Cluster hashes every key of one user by the same
// tag (the text up to its first "}") and puts them in one slot.
func userTag(scope, user string) string {
	switch {
	case scope != "":
		return scope + ":" + user
	case plainUser(user):
		return user
	default:
		return ":" + user
	}
}

// plainUser reports whether an unscoped user's id is its own tag: not
// empty, starting with neither ":" nor "}" (which would empty the hash
// tag), and not read as a scoped tag, that is without a ":" or with what
// precedes its first ":" not a scope name. Ordinary ids (u-42,
// alice@example.com, User:42) are plain, so their keys need no migration;
// docs/how-to-upgrade.md names the ids that are not.
func plainUser(user string) bool {
	if user == "" || user[0] == ':' || user[0] == '}' {
		return false
	}
	head, _, scoped := strings.Cut(user, ":")
	return !scoped || !ValidCategory(head)
}
