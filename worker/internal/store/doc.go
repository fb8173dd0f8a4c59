// Package store is the job store's Redis side: the keys of a job's
// records and the key builders (JobKey, DevKey, ...), the records' fields
// and states and the reads of them (records.go), the Lua scripts (one
// .lua file each) and the builders of their ARGV (StartArgs, RecordArgs,
// ...), the done buckets that keep a finished job's compact status
// (DoneBuckets, CompactStatus), the events its writes append to
// hush:events (Events, FinalEvent, EncodeEvent), the group commits of
// device outcomes (Recorder) and of record.lua calls (ScriptBatcher), and
// Persist, which keeps a write of an acknowledged send trying through a
// Redis outage. Every Redis command on a job's keys is made here, or by
// package worker's store*.go through these names, and by no other file
// (worker/storedoor_test.go); each script names its KEYS and ARGV in its
// header (worker/scripts_test.go).
//
// The fault simulation's deliberate bugs that live here are switched with
// internal/mutant (mutant.On, built with -tags hushmutant and named in
// HUSH_MUTANT).
//
// It imports the standard library, payload and wire (the types it
// encodes), the vocabulary (worker/internal/task), decide.Attempts (the
// attempt history it reads), the group commit (worker/internal/groupcommit),
// internal/mutant and go-redis, and no other part of the worker.
//
// # Redis keys
//
// Besides Asynq's and the limiter's. A job's keys share the hash tag
// {<id>} (JobTag), so they live on one Redis Cluster slot. The keys but
// hush:events are built here only.
//
//	hush:job:{<id>}       hash: the job record (state, counters per final
//	                      state, cancelled_at, app_wait, and "h:<index>",
//	                      the held marker naming the one task that owns a
//	                      held recipient: task.HeldMark)
//	hush:job:{<id>}:r     hash: recipient index -> final state
//	hush:job:{<id>}:dev   hash: "<recipient>/<device>" -> device state, and
//	                      each recipient's attempts (the worker's attemptsOf)
//	hush:job:{<id>}:x     hash: recipient index -> final state other than
//	                      delivered, and a failure's reason (ExceptKey);
//	                      kept as long as the job's done entry
//	hush:done:{<tag>}:<width>:<bucket>
//	                      hash: job id -> a finished job's compact status,
//	                      once its three keys above are deleted (done.go)
//	hush:jobs-at:{<queue>/<s>}
//	                      hash: the hush:waiting-jobs groups waiting for
//	                      their second's task (TogetherKeys)
//	hush:held-run:{<task>} a held task's run mark (HeldRunKey)
//	hush:throttle-reset:{<n>}
//	                      string: the reset mark, the limiter's instant
//	                      before which a booking may be gone (ResetMarkKey)
//	hush:events           stream of events, capped (the worker's events.go)
package store
