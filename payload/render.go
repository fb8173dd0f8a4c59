package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
)

// ErrPayloadTooLarge is returned (wrapped) by RenderAPNs and RenderFCM when
// the rendered payload exceeds its platform's limit (MaxPayloadBytes for
// both). Validate reports the same condition as a field problem before
// anything is sent.
var ErrPayloadTooLarge = errors.New("rendered payload too large")

// RenderAPNs renders the APNs JSON body for c:
//
//	{"aps":{"alert":{"title":..,"body":..},"badge":..,"category":..,
//	        "mutable-content":1,"sound":..,"thread-id":..},
//	 "image":"https://...", <data keys>...}
//
// A silent push carries {"aps":{"content-available":1}} and its data keys.
// When an image is set, mutable-content is 1 and the URL travels in the
// custom key "image" for the app's notification service extension. The
// output is deterministic: encoding/json writes map keys sorted. HTML
// characters are not escaped, so every byte counts once against the limit.
func RenderAPNs(c *Content) ([]byte, error) {
	b, err := renderAPNs(c)
	if err != nil {
		return nil, err
	}
	if limit := platforms[APNs].maxBytes; len(b) > limit {
		return nil, fmt.Errorf("apns body is %d bytes, limit %d: %w", len(b), limit, ErrPayloadTooLarge)
	}
	return b, nil
}

// RenderFCM renders the FCM v1 message for c, without its target token and
// without the fields that depend on the moment of sending (android.ttl,
// apns-expiration), which the sender sets.
//
// notification{title,body,image} is absent for silent pushes; data is a
// copy of c.Data; android.priority is "high" for high and critical jobs,
// else "normal"; apns.headers carry apns-priority (see Content.APNsPriority),
// apns-push-type and apns-collapse-id; apns.payload is {"aps": ...}, the same
// aps dictionary as RenderAPNs (data reaches iOS through the data block).
func RenderFCM(c *Content) (*FCMMessage, error) {
	m := renderFCM(c)
	b, err := marshalCompact(m)
	if err != nil {
		return nil, fmt.Errorf("render fcm message: %w", err)
	}
	if limit := platforms[FCM].maxBytes; len(b) > limit {
		return nil, fmt.Errorf("fcm message is %d bytes, limit %d: %w", len(b), limit, ErrPayloadTooLarge)
	}
	return m, nil
}

// apsDict builds the aps dictionary shared by RenderAPNs and RenderFCM.
// It uses plain maps, ints and strings so a consumer can hand it to any
// JSON encoder (or an SDK's custom-data map) unchanged.
func apsDict(c *Content) map[string]any {
	aps := map[string]any{}
	if c.Silent {
		aps["content-available"] = 1
		return aps
	}
	a := c.Alert
	if a == nil {
		return aps
	}
	alert := map[string]any{}
	if a.Title != "" {
		alert["title"] = a.Title
	}
	if a.Body != "" {
		alert["body"] = a.Body
	}
	if len(alert) > 0 {
		aps["alert"] = alert
	}
	if a.Sound != "" {
		aps["sound"] = a.Sound
	}
	if a.Badge != nil {
		aps["badge"] = *a.Badge
	}
	if a.ThreadID != "" {
		aps["thread-id"] = a.ThreadID
	}
	if a.Category != "" {
		aps["category"] = a.Category
	}
	if a.Image != "" {
		aps["mutable-content"] = 1
	}
	return aps
}

func renderAPNs(c *Content) ([]byte, error) {
	body := make(map[string]any, len(c.Data)+2)
	for k, v := range c.Data {
		body[k] = v
	}
	if !c.Silent && c.Alert != nil && c.Alert.Image != "" {
		body["image"] = c.Alert.Image
	}
	body["aps"] = apsDict(c)
	b, err := marshalCompact(body)
	if err != nil {
		return nil, fmt.Errorf("render apns body: %w", err)
	}
	return b, nil
}

func renderFCM(c *Content) *FCMMessage {
	m := &FCMMessage{}
	if !c.Silent && c.Alert != nil {
		n := &FCMNotification{Title: c.Alert.Title, Body: c.Alert.Body, Image: c.Alert.Image}
		if *n != (FCMNotification{}) {
			m.Notification = n
		}
	}
	if len(c.Data) > 0 {
		m.Data = maps.Clone(c.Data)
	}
	android := &FCMAndroid{Priority: "normal", CollapseKey: c.CollapseKey}
	if c.Urgent() {
		android.Priority = "high"
	}
	if !c.Silent && c.Alert != nil && c.Alert.Sound != "" {
		android.Notification = &FCMAndroidNotification{Sound: c.Alert.Sound}
	}
	m.Android = android
	headers := map[string]string{
		"apns-priority":  strconv.Itoa(c.APNsPriority()),
		"apns-push-type": c.APNsPushType(),
	}
	if c.CollapseKey != "" {
		headers["apns-collapse-id"] = c.CollapseKey
	}
	m.APNS = &FCMAPNS{Headers: headers, Payload: map[string]any{"aps": apsDict(c)}}
	return m
}

// renderFCMJSON is the FCM message for c as JSON, to measure it.
func renderFCMJSON(c *Content) ([]byte, error) {
	return marshalCompact(renderFCM(c))
}

// marshalCompact is json.Marshal without HTML escaping and without the
// encoder's trailing newline.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
