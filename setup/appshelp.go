package setup

import "strings"

// AppsFileExample is an apps file, as `hush serve --help`, `hush apps
// check --help` and docs/configuration.md show it (a test checks it is
// valid and that the page shows it). Its lines fit a 60-column help.
const AppsFileExample = `apps:
  - name: shop
    apns:
      key_file: keys/AuthKey_ABC123DEFG.p8
      key_id: ABC123DEFG
      team_id: TEAM123456
      topic: com.example.shop
      production: true
      max_rate: 500/s
    fcm:
      credentials_file: keys/shop-firebase.json
      max_rate: 30000/1m
    throttle_group: shoppers
  - name: shop-lite
    fcm:
      credentials_file: keys/shop-firebase.json
      project_id: example-shop
    throttle_group: shoppers
  - name: courier
    apns:
      cert_file: keys/courier.p12
      cert_password: s3cret
      topic: com.example.courier
      production: true
    fcm:
      credentials_file: keys/courier-firebase.json
    throttle:
      limits: 30/1m
      min_gap: 1s
      quiet_hours: "off"
      categories:
        dispatch: none global=off
        news: 1/1d quiet=21:00-09:00
`

// AppsFileHelp describes the apps file (HUSH_APPS_FILE) for a help screen:
// its fields, an example, and how hush reads it. Lines fit 80 columns and
// are written to be rewrapped.
func AppsFileHelp() string {
	return `An apps file lists the apps one hush delivers for (a consumer app, a courier
app, a white-label brand), each with its own credentials, limiter rules and
send rates; a job names its app in "app". YAML or JSON, one schema. An
unknown field, a missing or unreadable file, a credential that does not
parse or a topic without credentials stops the start, naming the app, the
field and the reason (every problem at once):

  apps:                 the list of apps, each:
  - name                1 to 32 of a-z, 0-9, _ and -; required
    apns:               the app's APNs (iOS devices), optional:
      key_file          token auth: the .p8 key file,
      key_id            its key id
      team_id           and the developer team's id; or
      cert_file         certificate auth: the .p12 file
      cert_password     and its password
      topic             the app's bundle id; required
      production        true: Apple's production host; false (default):
                        the sandbox
      endpoint          another https:// host (a proxy, a test server)
      ca_file           a PEM CA bundle trusted for endpoint
      max_rate          most sends per second to APNs for this app,
                        across every process: N/window such as 500/s or
                        30000/1m; default: no cap
    fcm:                the app's FCM (Android devices), optional:
      credentials_file  the service-account JSON; required
      project_id        default: the service account's
      endpoint          another http(s):// endpoint
      max_rate          as apns's, e.g. the project's quota: 600000/1m
    webpush:            the app's Web Push (browsers, web apps), optional:
      private_key       the VAPID private key (hush webpush keys); required
      public_key        its public key, checked against it; optional
      subject           mailto: or https: contact for push services;
                        required
      ca_file           a PEM CA bundle trusted besides the system's
      max_rate          as apns's
    throttle:           the app's limiter rules, optional; a field left
                        out takes the HUSH_THROTTLE_* key's value:
      limits            as HUSH_THROTTLE_LIMITS: 10/1m,100/24h
      min_gap           as HUSH_THROTTLE_MIN_GAP: 3s
      quiet_hours       as HUSH_QUIET_HOURS: 22:00-08:00 or "off"
      categories        NAME: RULES [global=off] [quiet=HH:MM-HH:MM|off]
                        [required=on], one per line
                        (HUSH_THROTTLE_CATEGORIES's items)
      max_pending       as HUSH_THROTTLE_MAX_PENDING: 100
    throttle_group      apps naming the same group share one budget per
                        user and need the same throttle settings; without
                        it, each app's users have a budget of their own

File paths are relative to the apps file's directory. Example
(keys/ beside the file, e.g. a mounted Kubernetes Secret):

` + indent(AppsFileExample, "  ") + `
The HUSH_APNS_* and HUSH_FCM_* keys, when set, define one more app,
default, with the HUSH_THROTTLE_* rules; its users keep the limiter keys
they had before apps (hush:throttle:{<user>}; an id starting with : or },
or with an app-like name before its first :, is {:<user>}), another app's
are hush:throttle:{<app>:<user>}, or {<group>:<user>}. A job without "app" goes
to the only app, else to default. HUSH_DRY_RUN makes every app dry-run,
for the platforms it has credentials for (every platform for an app with
none); HUSH_DEFAULT_TIMEZONE and HUSH_THROTTLE_BYPASS apply to every app.

Every process looks at the apps file and every credential file every
` + shortDuration(appsPollInterval) + `, and at once on SIGHUP: a change is read, checked and built whole,
then serves new sends while sends under way finish with the old
credentials. A bad change is refused and logged
(hush_apps_reloads_total{result="refused"}), and the apps in use go on.
Check a file before shipping it: hush apps check FILE.
`
}

// indent puts pre before every line of s.
func indent(s, pre string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString(pre + line)
	}
	return b.String()
}
