// Package dryrun is the sender used with HUSH_DRY_RUN (and when no provider
// credentials are configured): it logs what would be sent, with the device
// token shortened, and reports every push delivered. No provider is called.
//
// It imports providers and payload only.
package dryrun
