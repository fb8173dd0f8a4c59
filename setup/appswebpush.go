package setup

import (
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
)

// fileWebPush checks an app's webpush block at path (nil: none) and
// returns its sender's configuration, nil when it has problems. The key
// pair and subject are checked by webpush.New when the senders are built,
// which names the field.
func fileWebPush(path string, e *webpushEntry, dir string, a *appSpec, ps *problems) *webpush.Config {
	if e == nil {
		return nil
	}
	n := len(ps.list)
	if e.PrivateKey == "" {
		ps.addf(path+".private_key", ps.lines[path], "required (hush webpush keys makes a pair)")
	}
	if e.Subject == "" {
		ps.addf(path+".subject", ps.lines[path], "required: a mailto: or https: URI a push service can reach you at")
	}
	rate(path, e.MaxRate, payload.WebPush, a, ps)
	if len(ps.list) > n {
		readable(path, dir, ps, "ca_file", e.CAFile)
		return nil
	}
	return &webpush.Config{PrivateKey: e.PrivateKey, PublicKey: e.PublicKey, Subject: e.Subject, CAFile: resolve(dir, e.CAFile)}
}
