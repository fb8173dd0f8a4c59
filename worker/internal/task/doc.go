// Package task is the worker's vocabulary: the task types and the ids
// derived from a job id, the limiter members, the held marker, the queue
// names, the final states and the clock. Every part of the worker speaks
// it; it decides nothing.
//
// It imports the standard library and package payload only, and no part
// of the worker.
package task
