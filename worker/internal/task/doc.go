// Package task is the worker's vocabulary: the task types and the ids
// derived from a job id, the limiter members, the held marker, the queue
// names, the task payloads (Chunk, Delivery), the final states, how long
// a job's records live, the clock, the apps (App, Apps) and the
// interfaces a worker is built with (Limiter, Pacer, Sender). Every part
// of the worker speaks it; it decides nothing.
//
// It imports the standard library, payload, wire, throttle and providers
// (the types the interfaces name), go-redis and client_golang, and no part
// of the worker.
package task
