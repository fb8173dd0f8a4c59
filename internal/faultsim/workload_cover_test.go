package faultsim

import (
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
)

// TestWorkloadCoversProduction: every seed's workload has what production
// runs and what the checks need to bite: Web Push devices (some at the
// hostile push service), APNs and FCM ones, a token throttled with a
// Retry-After above hush's own margin, night pushes inside the quiet
// hours, collapse keys, cancellations, send_at, expires_at, the rated
// app's fan-outs, users opting out and back in, and a gap above twice the
// rules' tolerance.
func TestWorkloadCoversProduction(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= 20; seed++ {
		sc := newScenario(seed, start, 4*time.Second, 3, skewSafe, knownBroken{})
		platforms := map[payload.Platform]int{}
		hostile := 0
		for _, u := range append(append([]*user(nil), sc.users...), sc.rated...) {
			for _, d := range u.devices {
				platforms[d.Platform]++
				if strings.HasPrefix(d.Token, webPushHostile) {
					hostile++
				}
			}
		}
		var night, collapse, cancels, sendAt, expires, rated int
		qs, qe := sc.quietAt.Add(sc.quiet.From), sc.quietAt.Add(sc.quiet.To)
		for _, js := range sc.jobs {
			at := start.Add(js.at)
			switch j := js.job; {
			case j.Category == "night" && !at.Before(qs) && at.Before(qe):
				night++
			case j.CollapseKey != "":
				collapse++
			case j.App == appRated:
				rated++
			}
			if js.cancelAfter > 0 {
				cancels++
			}
			if js.sendAtIn > 0 {
				sendAt++
			}
			if js.expiresIn > 0 {
				expires++
			}
		}
		optOuts, optIns := 0, 0
		for _, ps := range sc.prefs {
			if len(ps.optOut) > 0 {
				optOuts++
			} else {
				optIns++
			}
		}
		retryAfter := 0
		for _, ra := range sc.retryAfter {
			if ra >= retryAfterLo {
				retryAfter++
			}
		}
		for what, n := range map[string]int{
			"APNs devices": platforms[payload.APNs], "FCM devices": platforms[payload.FCM], "Web Push devices": platforms[payload.WebPush],
			"Web Push devices at the hostile service": hostile, "tokens throttled with a Retry-After": retryAfter,
			"night pushes inside the quiet hours": night, "collapse pushes": collapse, "cancellations": cancels,
			"send_at jobs": sendAt, "expires_at jobs": expires, "rated fan-outs": rated,
			"opt-outs": optOuts, "opt-ins": optIns,
		} {
			if n == 0 {
				t.Errorf("seed %d: no %s", seed, what)
			}
		}
		if sc.policy.MinGap <= 2*tolerance {
			t.Errorf("seed %d: gap %s, at most twice the tolerance %s: a gap kept by half passes", seed, sc.policy.MinGap, tolerance)
		}
	}
}
