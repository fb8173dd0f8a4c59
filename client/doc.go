// Package client calls hush's HTTP API (docs/openapi.yaml) from Go: submit
// a job, read its status, cancel it, show or reset one user's limiter
// state, put, read or delete a user's own preferences, delete a user.
//
//	c := client.New("http://hush:8080", client.WithToken(os.Getenv("HUSH_API_TOKEN")))
//	acc, err := c.Submit(ctx, job)
//	if apiErr, ok := errors.AsType[*client.Error](err); ok {
//		// apiErr.Status, apiErr.Message, apiErr.Problems (a 400's field problems)
//	}
//
// An answer with an error status is a *Error, built from the API's one error
// envelope {"error":{"message","problems"}}; a failure to reach the server
// is any other error. hush send, hush throttle, hush preferences and hush
// user use this package.
//
// Its answer types are package wire's, the ones the server encodes (Accepted,
// JobStatus, ThrottleStatus... are aliases of them). It imports only the
// standard library, hush's payload package (the job contract) and wire, so
// a backend can depend on it without pulling in Redis, Asynq or any
// provider SDK; a test enforces this.
package client
