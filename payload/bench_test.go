package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// bigJobJSON is a job at the recipient limit with the given devices each.
func bigJobJSON(b *testing.B, devicesEach int) []byte {
	b.Helper()
	j := Job{ID: "bench", Content: Content{Alert: &Alert{Title: "t", Body: "b"}}}
	for i := range MaxRecipients {
		r := Recipient{UserID: fmt.Sprintf("user-%d", i)}
		for d := range devicesEach {
			r.Devices = append(r.Devices, Device{Platform: FCM, Token: fmt.Sprintf("fcm:token-%d-%d", i, d)})
		}
		j.Recipients = append(j.Recipients, r)
	}
	in, err := json.Marshal(j)
	if err != nil {
		b.Fatal(err)
	}
	return in
}

func BenchmarkDecodeValidate(b *testing.B) {
	for _, devs := range []int{1, MaxDevices} {
		b.Run(fmt.Sprintf("recipients=%d/devices=%d", MaxRecipients, devs), func(b *testing.B) {
			in := bigJobJSON(b, devs)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				j, err := Decode(bytes.NewReader(in))
				if err != nil {
					b.Fatal(err)
				}
				if err := j.Validate(testNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRender(b *testing.B) {
	c := renderCases[0].content
	b.Run("apns", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := RenderAPNs(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fcm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := RenderFCM(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
