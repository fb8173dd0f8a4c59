// Package docs holds hush's contract: the OpenAPI 3.1 description of its
// HTTP API (openapi.yaml, served at GET /openapi.yaml and embedded here as
// OpenAPI) beside the guides written in Markdown.
//
// It imports only the standard library and nothing of hush, so every hush
// package (and any backend) can import it without a cycle.
package docs

import _ "embed"

// OpenAPI is openapi.yaml: the OpenAPI 3.1 description of the HTTP API,
// checked against the real handler by the worker package's tests.
//
//go:embed openapi.yaml
var OpenAPI []byte
