// Package simulate replays a trace of pushes ("time,user[,category[,timezone[,opted_out]]]"
// lines) through throttle's in-memory limiter under one or more rule sets,
// offline, and reports what each did: pushes allowed at once, deferred,
// dropped by their ttl and dropped because their user opted out of their
// category, the delays, what held pushes back, the time quiet
// hours added, and the same by category. Reports are text, JSON or one
// self-contained HTML page (report.html.tmpl, charts computed in
// html_charts.go). It also writes synthetic bursty traces to try rules on.
//
// hush simulate parses its flags into Options and calls Run or Generate.
// The package may import throttle, payload (category names) and setup (the
// worker's default rules); nothing that talks to Redis or a provider.
package simulate
