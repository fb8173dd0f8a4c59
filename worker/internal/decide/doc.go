// Package decide holds the decisions every path of the worker shares
// (a chunk's waves, held tasks, hush:waiting-jobs members, a wave booking
// again at a paced turn, delivery tasks), as pure functions of their
// inputs and the time, so that a table test covers every case:
//
//   - PlansItself: whether the path holding a booking plans it, or hands
//     it to its delivery task unplanned;
//   - Plan: what a booking means now (a Step): send, wait in place, come
//     back later, drop, or book again;
//   - RoutePlan (RouteTurn for a booking from a paced turn): what the path
//     holding the booking (its Holder) does with that plan (a Move): send,
//     hold it back, hand it to its delivery task, drop, or book again;
//     HandoffDest: where a recipient handed off goes; PacedNear: whether a
//     wave books a paced recipient again itself;
//   - PaceVerdict: whether a recipient's earliest turn at its app's send
//     rate lets it be sent at its slot;
//   - Judge: what a recipient's device answers mean (a Verdict): done, try
//     again (under a new booking, after RetryAfterOr's delay), book again,
//     fail, or stop for shutdown;
//   - GateOf: whether a read of a job's cancellation allows a send.
//
// Each path calls them and carries out their answer; none decides a step
// itself. The times they decide by (MaxInlineWait, LateRebook, WakeMargin,
// PaceLate, PaceSlack) are here too.
//
// Attempts, a delivery's attempt history, lives here rather than in the
// vocabulary (package task): its methods (Carries, Begun) are decisions,
// and task imports no part. The job store in package worker reads it from
// a job's records and fills it in.
//
// The fault simulation's deliberate bugs that live in these decisions are
// switched with internal/mutant (mutant.On, built with -tags hushmutant
// and named in HUSH_MUTANT).
//
// It imports the standard library, throttle (the reservation Plan reads),
// providers (the answers Judge reads), internal/mutant and the vocabulary
// (worker/internal/task), and no other part of the worker.
package decide
