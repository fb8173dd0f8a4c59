package worker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hushpush/hush/payload"
)

// connCounter is a Sender that reports the connections it holds open
// (webpush.Sender, whose push services are as many origins as its
// subscribers name).
type connCounter interface {
	OpenConns() int
}

// connCollector reports hush_webpush_open_connections per app at scrape
// time, from the apps serving now.
type connCollector struct {
	apps *Apps
	open *prometheus.Desc
}

func newConnCollector(apps *Apps) *connCollector {
	return &connCollector{apps: apps, open: prometheus.NewDesc("hush_webpush_open_connections",
		"Connections open to Web Push services, by app.", []string{"app"}, nil)}
}

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.open }

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	for _, app := range c.apps.All() {
		if s, ok := app.Senders[payload.WebPush].(connCounter); ok {
			ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.OpenConns()), app.Name)
		}
	}
}
