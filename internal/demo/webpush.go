package demo

import (
	"fmt"
	"net/http"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/setup"
)

// webPushUser is the demo user whose devices include a Web Push
// subscription beside APNs and FCM: one budget across the three.
const webPushUser = "u-1"

// startWebPush starts the demo's fake push service, gives cfg a VAPID
// key pair trusted by it, and makes webPushUser's subscription.
func (env *world) startWebPush(cfg *setup.Config) error {
	var err error
	if env.webpush, err = fake.StartWebPush(); err != nil {
		return fmt.Errorf("fake Web Push: %w", err)
	}
	ca, err := env.webpush.WriteCA(env.dir)
	if err != nil {
		return fmt.Errorf("fake Web Push CA: %w", err)
	}
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		return err
	}
	cfg.WebpushPrivateKey, cfg.WebpushPublicKey = key.PrivateKey(), key.PublicKey()
	cfg.WebpushSubject, cfg.WebpushCaFile = "mailto:demo@example.com", ca
	// The fake listens on 127.0.0.1, which the egress policy refuses
	// unless a private network allows it.
	cfg.WebpushOrigins, cfg.WebpushPrivateNetworks = []string{webpush.OriginsPublic}, []string{"127.0.0.0/8"}
	if env.webpushToken, err = env.webpush.Subscribe(key.PublicKey()); err != nil {
		return fmt.Errorf("fake Web Push subscription: %w", err)
	}
	return nil
}

// addWebPushDevice gives webPushUser's pushes the subscription token.
func addWebPushDevice(plan []*burstPush, token string) {
	for _, p := range plan {
		if p.user == webPushUser {
			p.devices = append(p.devices[:len(p.devices):len(p.devices)], payload.Device{Platform: payload.WebPush, Token: token})
		}
	}
}

// sent reports whether the provider accepted the push: APNs and FCM answer
// 200, a Web Push service 201.
func (a pushArrival) sent() bool { return a.status == http.StatusOK || a.status == http.StatusCreated }
