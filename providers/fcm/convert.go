package fcm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"firebase.google.com/go/v4/messaging"
	"github.com/hushpush/hush/payload"
)

// message converts the rendered FCM message into the SDK's, addressed to
// token. A non-zero expiry sets android.ttl (whole seconds left, 0 when
// already past: "now or never") and the apns-expiration header.
func message(m *payload.FCMMessage, token string, expiry, now time.Time) (*messaging.Message, error) {
	msg := &messaging.Message{Token: token, Data: m.Data}
	if n := m.Notification; n != nil {
		msg.Notification = &messaging.Notification{Title: n.Title, Body: n.Body, ImageURL: n.Image}
	}
	if a := m.Android; a != nil {
		msg.Android = &messaging.AndroidConfig{Priority: a.Priority, CollapseKey: a.CollapseKey}
		if n := a.Notification; n != nil {
			msg.Android.Notification = &messaging.AndroidNotification{Sound: n.Sound, Tag: n.Tag}
		}
	}
	if a := m.APNS; a != nil {
		cfg, err := apnsConfig(a)
		if err != nil {
			return nil, err
		}
		msg.APNS = cfg
	}
	if !expiry.IsZero() {
		ttl := max(expiry.Sub(now).Truncate(time.Second), 0)
		if msg.Android == nil {
			msg.Android = &messaging.AndroidConfig{}
		}
		msg.Android.TTL = &ttl
		if msg.APNS == nil {
			msg.APNS = &messaging.APNSConfig{}
		}
		if msg.APNS.Headers == nil {
			msg.APNS.Headers = map[string]string{}
		}
		msg.APNS.Headers["apns-expiration"] = strconv.FormatInt(expiry.Unix(), 10)
	}
	return msg, nil
}

// apnsConfig converts the apns block: headers are copied; the payload's
// "aps" dictionary goes through JSON into messaging.Aps (which knows alert,
// sound, badge, content-available, ...), other keys become custom data.
func apnsConfig(a *payload.FCMAPNS) (*messaging.APNSConfig, error) {
	cfg := &messaging.APNSConfig{}
	if len(a.Headers) > 0 {
		cfg.Headers = make(map[string]string, len(a.Headers))
		for k, v := range a.Headers {
			cfg.Headers[k] = v
		}
	}
	if a.Payload == nil {
		return cfg, nil
	}
	p := &messaging.APNSPayload{}
	for k, v := range a.Payload {
		if k != "aps" {
			if p.CustomData == nil {
				p.CustomData = map[string]any{}
			}
			p.CustomData[k] = v
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("apns payload aps: %w", err)
		}
		p.Aps = &messaging.Aps{}
		if err := json.Unmarshal(b, p.Aps); err != nil {
			return nil, fmt.Errorf("apns payload aps: %w", err)
		}
	}
	if p.Aps == nil {
		p.Aps = &messaging.Aps{}
	}
	cfg.Payload = p
	return cfg, nil
}
