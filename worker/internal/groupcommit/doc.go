// Package groupcommit is hush's one group commit: calls that arrive close
// together are written by one flush (one Redis pipeline, one Asynq task),
// and each caller is answered with its own result, as if its call had run
// alone. The worker's device outcomes (store_outcomes.go), its record.lua calls
// (store_scriptbatch.go) and a Client's submissions (gather.go) are its users.
//
// A Group has two ways of deciding when a flush starts (Options):
//
//   - lingering (the default): a batch starts with its first call and is
//     flushed Linger later, or at once when it holds MaxSize calls; flushes
//     run side by side. A write that must follow an answer closely (a
//     device outcome) waits at most Linger.
//   - serial: one flush at a time. A call into an idle group is flushed at
//     once; calls arriving meanwhile are flushed when it ends, after waiting
//     up to Linger for as many callers as it answered to come back, so a
//     caller submitting one job after another is carried by the next flush
//     instead of just missing it.
//
// A flush runs under a context of its own (Options.Timeout), not a
// caller's: a caller whose context ends stops waiting and gets the
// context's error, and its call may still be flushed. A flush that fails or
// panics answers every caller in it with the error; the group goes on.
// Drain flushes what waits without lingering and waits for every flush
// under way (a process's shutdown).
//
// The package imports only the standard library.
package groupcommit
