package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func intPtr(n int) *int { return &n }

// renderCases is the representative set kept as golden files.
var renderCases = []struct {
	name    string
	content Content
}{
	{"full_alert", Content{
		Alert: &Alert{
			Title: "Your order shipped", Body: "Order 4711 is on its way <3 & more",
			Sound: "default", Badge: intPtr(3), Category: "ORDER", ThreadID: "orders",
		},
		Data: map[string]string{"order": "4711"},
	}},
	{"silent", Content{Silent: true, Data: map[string]string{"sync": "inbox", "since": "42"}}},
	{"minimal", Content{Alert: &Alert{Body: "Hello"}}},
	{"badge_zero", Content{Alert: &Alert{Title: "Read", Badge: intPtr(0)}}},
	{"with_image", Content{Alert: &Alert{Title: "New photo", Body: "Ann shared a photo", Image: "https://cdn.example.com/p/1.jpg"}}},
	{"with_data", Content{
		Alert: &Alert{Title: "Message"},
		Data:  map[string]string{"zeta": "last", "alpha": "first", "thread": "t-9", "url": "app://inbox?x=1&y=2"},
	}},
	{"high_collapse", Content{
		Alert:       &Alert{Title: "Score", Body: "2:1", Sound: "goal.caf"},
		Priority:    PriorityHigh,
		CollapseKey: "match-17",
	}},
	{"critical_silent", Content{Silent: true, Priority: PriorityCritical, CollapseKey: "sync"}},
}

func TestRenderAPNsGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderAPNs(&tc.content)
			if err != nil {
				t.Fatalf("RenderAPNs: %v", err)
			}
			if !json.Valid(got) {
				t.Fatalf("RenderAPNs output is not valid JSON: %s", got)
			}
			checkGolden(t, "apns_"+tc.name+".golden", got)
		})
	}
}

func TestRenderFCMGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := RenderFCM(&tc.content)
			if err != nil {
				t.Fatalf("RenderFCM: %v", err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(m); err != nil {
				t.Fatalf("marshal: %v", err)
			}
			checkGolden(t, "fcm_"+tc.name+".golden", buf.Bytes())
		})
	}
}

// TestRenderFCMSharesAPS checks that the FCM apns override carries exactly
// the aps dictionary of the APNs body.
func TestRenderFCMSharesAPS(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := RenderAPNs(&tc.content)
			if err != nil {
				t.Fatal(err)
			}
			var apnsBody struct{ APS json.RawMessage }
			if err := json.Unmarshal(body, &apnsBody); err != nil {
				t.Fatal(err)
			}
			m, err := RenderFCM(&tc.content)
			if err != nil {
				t.Fatal(err)
			}
			fcmAPS, err := marshalCompact(m.APNS.Payload["aps"])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(apnsBody.APS), string(fcmAPS)); diff != "" {
				t.Errorf("aps differs (-apns +fcm):\n%s", diff)
			}
		})
	}
}

func TestRenderDoesNotAliasData(t *testing.T) {
	c := Content{Silent: true, Data: map[string]string{"k": "v"}}
	m, err := RenderFCM(&c)
	if err != nil {
		t.Fatal(err)
	}
	m.Data["k"] = "changed"
	if c.Data["k"] != "v" {
		t.Errorf("RenderFCM data aliases the job's data: job now has %q", c.Data["k"])
	}
}

// apnsBodyOfSize returns content whose rendered APNs body is exactly n bytes.
func apnsBodyOfSize(t *testing.T, n int) Content {
	t.Helper()
	c := Content{Alert: &Alert{Title: "t"}, Data: map[string]string{"pad": ""}}
	b, err := renderAPNs(&c)
	if err != nil {
		t.Fatal(err)
	}
	c.Data["pad"] = strings.Repeat("a", n-len(b))
	if b, _ := renderAPNs(&c); len(b) != n {
		t.Fatalf("built an APNs body of %d bytes, want %d", len(b), n)
	}
	return c
}

// fcmMessageOfSize returns content whose rendered FCM message is exactly n bytes.
func fcmMessageOfSize(t *testing.T, n int) Content {
	t.Helper()
	c := Content{Alert: &Alert{Title: "t"}, Data: map[string]string{"pad": ""}}
	b, err := marshalCompact(renderFCM(&c))
	if err != nil {
		t.Fatal(err)
	}
	c.Data["pad"] = strings.Repeat("a", n-len(b))
	if b, _ := marshalCompact(renderFCM(&c)); len(b) != n {
		t.Fatalf("built an FCM message of %d bytes, want %d", len(b), n)
	}
	return c
}

func TestRenderSizeLimit(t *testing.T) {
	t.Run("apns 4096 ok", func(t *testing.T) {
		c := apnsBodyOfSize(t, MaxPayloadBytes)
		b, err := RenderAPNs(&c)
		if err != nil {
			t.Fatalf("RenderAPNs at %d bytes: %v", MaxPayloadBytes, err)
		}
		if len(b) != MaxPayloadBytes {
			t.Errorf("len = %d, want %d", len(b), MaxPayloadBytes)
		}
	})
	t.Run("apns 4097 rejected", func(t *testing.T) {
		c := apnsBodyOfSize(t, MaxPayloadBytes+1)
		if _, err := RenderAPNs(&c); !errors.Is(err, ErrPayloadTooLarge) {
			t.Fatalf("RenderAPNs at %d bytes: err = %v, want ErrPayloadTooLarge", MaxPayloadBytes+1, err)
		}
	})
	t.Run("fcm 4096 ok", func(t *testing.T) {
		c := fcmMessageOfSize(t, MaxPayloadBytes)
		if _, err := RenderFCM(&c); err != nil {
			t.Fatalf("RenderFCM at %d bytes: %v", MaxPayloadBytes, err)
		}
	})
	t.Run("fcm 4097 rejected", func(t *testing.T) {
		c := fcmMessageOfSize(t, MaxPayloadBytes+1)
		if _, err := RenderFCM(&c); !errors.Is(err, ErrPayloadTooLarge) {
			t.Fatalf("RenderFCM at %d bytes: err = %v, want ErrPayloadTooLarge", MaxPayloadBytes+1, err)
		}
	})
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./payload -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}
