package payload

import (
	"encoding/hex"
	"testing"
)

func TestPriorityAndPlatform(t *testing.T) {
	for _, p := range []Priority{"", PriorityNormal, PriorityHigh, PriorityCritical} {
		if !p.Valid() {
			t.Errorf("Priority(%q).Valid() = false, want true", p)
		}
	}
	for _, p := range []Priority{"low", "HIGH", " high"} {
		if p.Valid() {
			t.Errorf("Priority(%q).Valid() = true, want false", p)
		}
	}
	if got := Priority("").Effective(); got != PriorityNormal {
		t.Errorf(`Priority("").Effective() = %q, want normal`, got)
	}
	for p, want := range map[Platform]bool{APNs: true, FCM: true, "": false, "APNS": false, "web": false} {
		if got := p.Valid(); got != want {
			t.Errorf("Platform(%q).Valid() = %v, want %v", p, got, want)
		}
	}
}

func TestContentHeaders(t *testing.T) {
	tests := []struct {
		name         string
		c            Content
		wantPriority int
		wantPushType string
		wantAndroid  string
	}{
		{"default alert", Content{}, 5, "alert", "normal"},
		{"normal alert", Content{Priority: PriorityNormal}, 5, "alert", "normal"},
		{"high alert", Content{Priority: PriorityHigh}, 10, "alert", "high"},
		{"critical alert", Content{Priority: PriorityCritical}, 10, "alert", "high"},
		{"silent", Content{Silent: true}, 5, "background", "normal"},
		{"silent critical stays 5", Content{Silent: true, Priority: PriorityCritical}, 5, "background", "high"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.APNsPriority(); got != tc.wantPriority {
				t.Errorf("APNsPriority = %d, want %d", got, tc.wantPriority)
			}
			if got := tc.c.APNsPushType(); got != tc.wantPushType {
				t.Errorf("APNsPushType = %q, want %q", got, tc.wantPushType)
			}
			if got := renderFCM(&tc.c).Android.Priority; got != tc.wantAndroid {
				t.Errorf("android.priority = %q, want %q", got, tc.wantAndroid)
			}
		})
	}
}

func TestIsBypass(t *testing.T) {
	bypass := []Priority{PriorityCritical}
	tests := []struct {
		p      Priority
		bypass []Priority
		want   bool
	}{
		{PriorityCritical, bypass, true},
		{PriorityHigh, bypass, false},
		{"", bypass, false},
		{"", []Priority{PriorityNormal}, true},
		{PriorityCritical, nil, false},
	}
	for _, tc := range tests {
		c := Content{Priority: tc.p}
		if got := c.IsBypass(tc.bypass); got != tc.want {
			t.Errorf("priority %q, bypass %v: IsBypass = %v, want %v", tc.p, tc.bypass, got, tc.want)
		}
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID()
		if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("NewID() = %q, want 32 hex characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
		if err := checkIDOnly(id); err != nil {
			t.Fatalf("NewID() = %q does not pass the id rule: %v", id, err)
		}
	}
}

func checkIDOnly(id string) error {
	var ps problems
	checkID(&ps, id)
	return ps.err()
}
