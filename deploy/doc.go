// Package deploy holds hush's deployment files and the tests that check them:
// the Kubernetes manifests under kubernetes/ (base/, redis/ and the
// overlays/dry-run and overlays/production kustomizations, each rendered
// with kustomize's own library and decoded strictly into the real
// Kubernetes and KEDA API types), compose.yaml for local use, and the
// repository's Dockerfile (parsed with BuildKit's own parser).
//
// It is a separate Go module so that the main module does not depend on
// k8s.io/api, KEDA, kustomize or BuildKit. It has no code of its own: run
// its tests with
//
//	cd deploy && go test ./...
//
// The tests read ../Dockerfile, ../cmd/hush and ../setup/config.go (the
// authoritative list of HUSH_* keys), so they must run from a checkout of the
// whole repository.
package deploy
