// Package throttle is hush's per-user limiter: several exact rolling windows
// ("10/1m,100/24h") plus a minimum gap between two actions, decided
// atomically in Redis (Redis) or in process memory (Memory) with the same
// semantics, and a global send rate per key (Pacer, MemoryPacer). What the
// rules mean for a push, and what each refusal leads to, is in
// docs/limiter.md; what the limiter costs is in docs/performance.md.
//
// # Semantics
//
// Times are integer milliseconds. A user's set holds entries: recorded
// actions (Allow) and bookings (Reserve), possibly in the future. Two
// entries share a window of rule N/W when they are less than W apart. A
// time t is feasible when adding it leaves no window of any rule with more
// than N entries around t and t is at least MinGap from every entry.
// Allow records the action only when now is feasible; otherwise it returns
// RetryAfter and records nothing, so denied attempts neither grow the set
// nor slow decisions. Reserve books the earliest feasible instant (possibly
// in a hole between bookings) under a member id and returns the same slot
// for the same member (Existing). Being limited is a result: a Decision or
// a Reservation, never an error; errors mean the infrastructure failed.
//
// Reserve refuses a new member instead of booking it (Reservation.Refused):
// RefusedFull when the user holds Options.MaxPending entries after now
// (DefaultMaxPending when 0, NoMaxPending for no cap), RefusedLate when the
// earliest slot is after Request.NotAfter, RefusedCollapsed when a newer
// push with the same Request.CollapseKey replaced it. Reserve's steps, in
// order: an existing member gets its slot back; a collapsed member is
// refused; a member accepted before the one its key names is refused; the
// held booking with the same collapse key is taken out; the cap; the
// search; NotAfter; the booking.
//
// Policy.Categories are named rule sets a Request may name: a booking of
// category c keeps c's rules among c's entries and the global rules among
// theirs, unless Category.SkipGlobal exempts it. Policy.Quiet (or a
// category's own) is a daily window of wall-clock time in the Request's
// Location in which nothing is booked (quiet.go turns it into intervals of
// UTC instants, correct across clock changes). Request.NotBefore is where
// the search starts when it is after now (a scheduled send).
//
// Decision.DeniedBy names the rule that on its own would be satisfied
// latest; Reservation.HeldBy names what holds a slot after now: the first
// rule that rules out the instant just before it, else quiet hours, else
// NotBefore (held.go).
//
// Entries older than a set's horizon (its longest window, or the gap if
// longer) change no decision and are trimmed when the set is written.
// Time is expected to move forward per user.
//
// # Redis schema
//
// Per user, K = Options.Prefix (DefaultPrefix, "hush:throttle:") + "{" +
// tag + "}". The tag (keys.go, userTag) is scope + ":" + user under
// Options.Scope; without a scope it is the user id when the id is plain
// (not empty, not starting with ":" or "}", and nothing before its first
// ":" that could be a scope name), else ":" + user. So no two users of any
// scopes share a tag, and the braces are a Redis Cluster hash tag: every
// key of one user is in one slot.
//
//	K             sorted set, the global rules' entries: member =
//	              "allow:<random hex>" for Allow or the caller's member id
//	              for Reserve, score = time in ms
//	K:c:<cat>     sorted set, category <cat>'s own entries
//	K:k           hash of collapse records: "k:<cat>:<key>" -> the
//	              newest accepted member booked with it, "x:<member>" ->
//	              the member that replaced it (reserve.lua's header)
//	K:p           hash of the user's Preferences (prefs.go): "o:<cat>"
//	              -> "1" per opt-out, "quiet", "zone"; no TTL. reserve.lua
//	              asks HEXISTS of it for a booking whose category may be
//	              opted out of, in the same call (RefusedOptedOut)
//
// A set's TTL covers its newest entry plus its horizon. The pacer's key,
// Options.Prefix (DefaultPacerPrefix, "hush:rate:") + "{" + name + "}", is
// a string holding the key's theoretical arrival time (pacer.lua's
// header).
//
// Every operation is one Lua script, one .lua file each (allow_one.lua and
// allow_batch.lua around allow.lua, reserve.lua, release.lua, status.lua,
// pacer.lua), prefixed with lib.lua and embedded (scripts.go, pacer.go);
// each file's header names its KEYS, ARGV and reply. Reset is a DEL.
// Status reads the sets in a script and decides in Go (status.go) with the
// code the in-memory limiter uses. AllowBatch, ReserveBatch and Pace make
// one network round trip: on a *redis.Client one script call per chunk of
// requests; on Redis Cluster ReserveBatch makes one call per node
// (reserve.go), and AllowBatch, Pace and other clients one per key, split
// by slot. All paths decide the same. ReserveBatchWith puts the caller's own commands in the same
// pipeline; Uses tells whether the limiter runs on the caller's client.
//
// # Pacer
//
// Pacer is GCRA without burst: at most Rate grants per second on one key,
// across every process. A request for N sends starts at max(TAT, now,
// NotBefore), is granted start + i*I for i < N (I is 1 s / Rate, rounded up
// to a whole nanosecond), and moves TAT to start + N*I. A request whose
// Latest is before its start is held: it is granted nothing and TAT stays.
//
// # Clock
//
// The Redis limiter and pacer trust the Redis server's TIME, read inside
// each script, so processes with skewed clocks agree. Options.Clock injects
// a time instead (tests, simulation, replay); Memory and MemoryPacer use
// time.Now when it is nil.
//
// # Imports
//
// The standard library and github.com/redis/go-redis/v9 only; the package
// knows nothing of jobs, providers or Asynq.
package throttle
