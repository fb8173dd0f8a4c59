// Package throttle is hush's per-user limiter: several exact rolling windows
// ("10/1m,100/24h") plus a minimum gap between two actions, decided
// atomically in Redis (Redis) or in process memory (Memory) with the same
// semantics.
//
// # Semantics
//
// Times are integer milliseconds. A user's set holds entries: recorded
// actions (Allow) and bookings (Reserve), possibly in the future. Two
// entries share a window of rule N/W when they are less than W apart, so an
// entry exactly W old no longer counts. A time t is feasible when adding it
// leaves no window of any rule with more than N entries around t and t is at
// least MinGap from every entry (exactly MinGap is allowed). Allow records
// the action only when now is feasible; otherwise it returns the time left
// until the earliest feasible instant (RetryAfter) and records nothing, so a
// flood of denied attempts neither grows the set nor slows decisions.
// Reserve records the earliest feasible instant (possibly in a hole between
// bookings) under a member id and returns the same slot for the same member.
//
// Reserve may refuse a new member instead, booking nothing; the
// Reservation's Refused says why (empty: the member holds At).
// Options.MaxPending caps the entries after now one user may hold
// (DefaultMaxPending, 100, when it is 0, as `hush serve` does by default;
// NoMaxPending lifts the cap): at the cap a new member is RefusedFull, with At the user's earliest entry after
// now (no place frees before it comes due, unless a booking is released).
// Entries at or before now do not count, and Allow, which records only at
// now, is never refused by the cap. Request.NotAfter (ReserveBatch) refuses
// a new member whose earliest slot is after it: RefusedLate, with At and
// Wait that slot; exactly NotAfter is booked. The cap is checked before the
// slot is sought, so a user at the cap is RefusedFull whatever NotAfter
// says. A member already booked gets its slot back (Existing) whatever the
// cap and NotAfter say.
//
// # Categories, quiet hours, send-at, collapse
//
// Policy.Categories are named rule sets a Request may name. A booking of
// category c keeps c's Limits and MinGap among the entries of c, and the
// global ones (Policy.Limits, MinGap) among the entries that keep them;
// Category.SkipGlobal exempts c from the global rules (its entries neither
// wait for nor count toward them). So each booking is kept in one or two
// sets: the user's global set and/or its category's own (a category
// without rules of its own that keeps the global rules has none), and the
// first of them is its home, where an existing member is looked for. Every
// set is trimmed by its own horizon, except that the global set keeps
// entries as long as the longest horizon of a category whose bookings it
// also holds, so a member never lingers in one set after leaving the other.
// Entries older than a set's horizon change no decision (every read is by
// score range after now - horizon, or by rank among the newest entries
// when enough of them lie inside a window), and a member whose entry is
// that old holds no slot (booking it again moves it), so Reserve trims a
// set on about one write in eight rather than before reading it. Reserve
// skips a second set's counts when the home set's counts show its rules
// cannot deny (its entries within its horizon are among the home set's).
//
// Policy.Quiet (or a category's own Quiet) are quiet hours: a daily window
// of wall-clock time in the Request's Location. Reserve books no instant
// whose wall-clock time falls inside them: the search skips to the end of
// the quiet run it lands in. Go turns the window into intervals of UTC
// instants (quiet.go: constant-offset spans from time.Time.ZoneBounds, the
// window periodic within each, the pieces of one night joined across a
// clock change) from a day before the search's start up to NotAfter, or,
// when the request has none, up to quietLookahead (62 days) after the
// start, which then acts as its NotAfter. A refused-late slot is the one
// the search found with the quiet intervals beginning after NotAfter left
// out. Status's NextAllowed is never quiet: its search (nextOpen) goes on
// one lookahead at a time until its answer lies within the intervals
// computed.
//
// Request.NotBefore is where the search starts when it is after now (a
// scheduled send).
//
// Request.CollapseKey: Reserve remembers, per user, category and key, the
// newest accepted member booked with it (Request.Accepted orders them).
// The newest accepted push wins whatever books later: a new member
// accepted before the remembered one is RefusedCollapsed, booked or not
// (an older push's retry never replaces a newer push, nor is sent after
// it). One accepted no earlier (on a tie, the later booking wins) takes
// the remembered member's booking out when it lies more than
// Options.CollapseMargin after now (a held push, not one on its way),
// seeks its own slot without it, and, when it books, records the old
// member as collapsed (Reservation.Collapsed); when it is refused, the old
// booking is put back. The collapsed member's own Reserve is then
// RefusedCollapsed. Since the old booking's slot satisfied every rule,
// the new one's slot is at it or earlier, unless its own NotBefore or
// quiet hours say otherwise.
//
// A record lasts while the booking it names is in its set's window (its
// slot plus the home set's horizon) and is deleted after, on the next
// booking that writes the hash: so the hash holds at most a record per
// booking with a collapse key and per collapse within the user's windows,
// and a push older than one that left the window is no longer refused.
//
// Reserve's steps, in order: an existing member in the home set gets its
// slot back; a collapsed member is refused; a member accepted before the
// one its key names is refused; the held booking with the same collapse
// key is taken out; the cap (MaxPending, each set counted); the
// search; NotAfter; the booking. (Without a collapse key, the existing
// member is looked for by the booking's ZADD NX, and before a refusal:
// the order of the answers is the same.)
//
// DeniedBy names, among the rules that deny now, the one that on its own
// would be satisfied latest (the first such rule on a tie, limits in order
// before the gap): the rule to blame for most of the wait.
//
// Reservation.HeldBy names what holds a booked (or refused-late) slot
// after now: the first of the request's rules, in order, that rules out
// the instant just before the slot, else its quiet hours, or its
// NotBefore when the slot is that (held.go). reserve.lua finds it with no
// command of its own, from the sweep it makes anyway, and answers it in
// the sixth element of an array reply (a new booking held after now
// answers an array instead of its slot alone).
//
// Entries at or before now - max(longest window, MinGap) are trimmed when a
// user's set is written (by Reserve, on about one write in eight); they
// can no longer affect any decision. Time is
// expected to move forward per user; an injected clock that goes backwards
// sees only what trimming left.
//
// # Redis schema
//
// Per user, with K = Options.Prefix (default "hush:throttle:") + "{" +
// tag + "}", where the tag (keys.go's userTag) is, under Options.Scope s,
// s + ":" + user, and without a scope the user's id itself when it is
// plain, else ":" + user. A plain id is one no scoped tag can equal: not
// empty, starting with neither ":" nor "}", and with no ":" or with what
// comes before its first ":" not a scope name (1 to 32 of a-z, 0-9, _
// and -). So u-42 is "{u-42}", User:42 "{User:42}", courier:alice
// "{:courier:alice}", }x "{:}x}", and app courier's alice
// "{courier:alice}":
//
//	K             sorted set, the global rules' entries: member =
//	              "allow:<random hex>" for Allow or the caller's member id
//	              for Reserve, score = time in ms
//	K:c:<cat>     sorted set, category <cat>'s own entries
//	K:k           hash of collapse records: "k:<cat>:<key>" -> the
//	              newest accepted member booked with it, "x:<member>" ->
//	              the member that replaced it, each "<until ms>
//	              <accepted ms> <member>" (reserve.lua's header)
//	K:p           hash of the user's Preferences (prefs.go): "o:<cat>"
//	              -> "1" per opt-out, "quiet" -> "<from ms> <to ms>",
//	              "zone" -> a zone name; no TTL. reserve.lua asks HEXISTS
//	              of it for a booking whose category may be opted out of
//	              (not Required, the request not Critical): one command,
//	              in the same call, and a RefusedOptedOut answer takes the
//	              member out of the request's sets.
//
// No two users of any scopes share a tag: a scoped tag starts with its
// scope, which its first ":" ends; a plain id is neither empty nor starts
// with ":", nor has a scope before its first ":"; only the other
// unscoped ids' tags start with ":". An id may hold "}" or ":", yet a key
// names one set of one tag: category names have no ":" or "}", so read
// from its end a key ends in "}" (K), "}:k" (the hash) or ":c:" and a
// category (or "}:p", the preferences hash). Scopes are apps' and throttle groups' names alike: apps that
// share a group share its scope, and the caller keeps an app outside a
// group from having the group's name. The braces are a hash tag: a tag is
// never empty nor starts with "}", and Options.Prefix has no braces, so
// Redis Cluster hashes every key of one user by the tag's text up to its
// first "}", one slot whatever the id holds, and each single-user script
// works on Redis Cluster. A set's TTL
// (PEXPIRE) covers its newest entry plus its horizon, the hash's at least
// as long as the sets written with it; with an injected clock it is at
// least an hour, because TTLs tick in the server's real time.
//
// Every operation is one Lua script (allow_one.lua and allow_batch.lua
// around allow.lua's decision, reserve.lua for one request or many,
// release.lua, status.lua), prefixed with lib.lua, embedded and run with
// EVALSHA (EVAL when the server lacks it); Reset is a DEL. Status reads
// the sets in a script and decides in Go (status.go), with the code the
// in-memory limiter uses. With no entry after now, Allow costs O(log n) in calls
// that answer integers: a ZCOUNT for entries after now (a ZREVRANGE 0 0 for
// the last entry instead when there is a gap), a ZCOUNT per rule, and when a
// rule denies a ZREVRANGE by index for its N-th most recent entry; when it
// records, ZADD and PEXPIRE, with ZREMRANGEBYSCORE only when ZCARD shows
// entries outside the horizon. A Reserve with no entry after now, no
// collapse key and no cap costs the same kind of calls: a ZCOUNT for
// entries after now, a ZCOUNT per rule (a ZREVRANGE by index when it
// denies), a ZREVRANGE 0 0 for the last entry only when there is a gap and
// no window at least as long is empty, then ZADD NX and PEXPIRE (a ZSCORE
// when the member was there), with ZREMRANGEBYSCORE on about one booking
// in eight. Only when bookings lie after now does a
// script read the user's recent entries; it then sweeps
// the instants each rule rules out (for N entries less than W apart,
// (last-W, first+W); around each entry, (e-MinGap, e+MinGap)) in one pass
// per rule, O(entries x rules), landing on now or some e+W or e+MinGap. The
// in-memory limiter tests those candidates in ascending order instead: two
// algorithms, both checked against a brute-force model in the tests.
//
// AllowBatch and ReserveBatch make one network round trip. On a
// *redis.Client (standalone or Sentinel) they run allow_batch.lua or
// reserve.lua once per chunk of up to 256 users: the same per-user code in
// a loop over the chunk's keys, at one instant (TIME read once per call), a
// failing user (WRONGTYPE) reported alone; a request naming an unknown
// category fails alone too (ErrUnknownCategory). Script invocation, not
// the commands, dominates a single decision's cost on the server, so this
// is what makes batches cheap. On Redis Cluster the keys may live on
// different nodes: ReserveBatch groups the requests by the node the
// client's slot map places their keys on and calls reserve.lua once per
// node's chunk in its node form (the keys travel in ARGV; a script may
// touch keys of any slot its node serves), which checks each request's
// keys are served there before writing, and books a request whose slot
// moved again on its own. AllowBatch (and any other client) pipelines one
// single-key script call per user instead, split by slot. All paths decide
// the same.
// ReserveBatchWith lets a caller put its own commands in the same pipeline
// (the worker writes a job's record and books its one recipient in one
// round trip); Uses tells whether the limiter runs on the caller's client.
//
// # Cost of one user's bookings
//
// Without a cap (NoMaxPending) nothing bounds a user's bookings, and every Allow, Peek,
// Status and slot-seeking Reserve for that user reads and sweeps them all,
// while the server serves no one else. With MaxPending = P a user's set
// holds at most P entries after now, plus those in (now - horizon, now],
// which the rules bound (at most the N of the longest window's limit; one
// when the gap is the longest). So each of those decisions reads and sweeps
// at most P + N entries, O((P + N) x rules), whatever the caller asks for.
// A Reserve refused by the cap costs O(log n): a ZCOUNT over (now, +inf],
// a ZSCORE and one ZRANGEBYSCORE ... LIMIT 0 1. One refused for NotAfter has sought its
// slot, so it costs what a booking does, less the write. Entries booked
// before the cap was set or lowered still count until they come due. (The
// bound, like every other, assumes time moves forward per user.)
//
// Reading the entries, not sweeping them, dominates: about 1 us of Redis
// per entry, most of it turning scores into strings for Lua. So the cost
// grows linearly with P; BenchmarkPendingBookings, on the production policy
// 10/1m,100/24h with a 3 s gap, measured about 60 us of Redis CPU for a
// fresh user's Allow, 0.24 ms for an Allow behind 100 bookings, 1.7 ms
// behind 1,000 and 16 ms behind 10,000 (a slot-seeking Reserve costs about
// the same), while a Reserve refused at the cap costs no more than a fresh
// user's. Another run, on a 2-core machine (-benchtime 300x): 39 us fresh,
// 132 us behind 100 bookings, 1.3 ms behind 1,000, 12.3 ms behind 10,000;
// refused at the cap of 1,000: 39 us.
//
// # Clock
//
// By default the Redis limiter trusts the Redis server's TIME (read inside
// the script), so pods with skewed clocks agree. Options.Clock injects a
// time instead (tests, simulation, replay); the Memory limiter uses
// time.Now when it is nil.
//
// # Pacer
//
// Pacer is a global send rate per key, enforced across every process: at
// most Rate sends per second on one key (an app's provider quota, such as
// FCM's per project) from all worker pods together, so a huge fan-out
// paces itself instead of meeting the provider's 429s. It is GCRA without
// burst. Each key has a theoretical arrival time (TAT), the first instant
// not yet granted. A request for N sends starts at start = max(TAT, now,
// NotBefore), is granted start + i*I for i < N, where I is 1 s / Rate
// rounded up to a whole nanosecond, and moves TAT to start + N*I. So the
// requests on one key get runs of times that never overlap, with every two
// times at least I apart. Times are whole nanoseconds throughout, so no
// rounding adds up (600/s stays 1,666,667 ns apart). A request for no sends
// grants nothing and changes nothing. A request with a Latest earlier than
// its start is held: it is granted nothing and TAT does not move, so a
// caller that could not use a late time leaves it to the requests after
// it. Pace answers with Wait (start - now), Interval and Held.
// MemoryPacer has the same semantics in one process.
//
// Its key, with K = Options.Prefix (default "hush:rate:") + "{" + name +
// "}", is a string: the TAT as "<unix seconds>.<nanoseconds, 9 digits>".
// It expires 1 s after the TAT (at least an hour after now with an
// injected clock). An absent key is free now. The pacer trusts the same
// clock as the limiter: the Redis server's TIME, read once per script call,
// unless Options.Clock is set. MemoryPacer uses time.Now by default.
//
// Pace makes one round trip. On a *redis.Client it makes one pacer.lua call
// per 256 requests. On Redis Cluster or any other client it pipelines one
// call per key (split by slot). A call runs TIME, then one GET and one SET
// per key, whatever N and however many of its requests name that key.
// BenchmarkPacer (a 2-core machine, one goroutine) measured about 60 to 75
// us of Redis CPU for a call granting 1 send or 25 (2.5 to 3 us per send
// for 25), 110 to 125 us for 25 one-send requests on one key, and 205 to
// 255 us for 25 keys (52 commands). Invoking the script and the network I/O
// dominate, so pace a batch of sends in one call, not each push on its own.
//
// # Imports
//
// The standard library and github.com/redis/go-redis/v9 only; the package
// knows nothing of jobs, providers or Asynq.
package throttle
