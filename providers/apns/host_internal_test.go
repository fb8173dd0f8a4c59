package apns

import (
	"testing"

	"github.com/hushpush/hush/providers/fake"
	"github.com/sideshow/apns2"
)

func TestHost(t *testing.T) {
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		production bool
		endpoint   string
		want       string
	}{
		{"sandbox by default", false, "", apns2.HostDevelopment},
		{"production", true, "", apns2.HostProduction},
		{"endpoint overrides, path dropped", true, "https://127.0.0.1:4443/ignored", "https://127.0.0.1:4443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: "t",
				Production: tt.production, Endpoint: tt.endpoint})
			if err != nil {
				t.Fatal(err)
			}
			if s.client.Host != tt.want {
				t.Errorf("host = %q, want %q", s.client.Host, tt.want)
			}
		})
	}
}
