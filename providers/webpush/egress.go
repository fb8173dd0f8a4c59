package webpush

import (
	"github.com/hushpush/hush/providers"

	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hushpush/hush/payload"
)

// Egress is the policy for the URLs subscribers choose: which push-service
// origins a subscription's endpoint may name, and which addresses that are
// not public unicast may be dialled. Its zero value is the default:
// OriginsDefault, and no private network.
type Egress struct {
	// Origins are the allowed push-service hosts: "host" (port 443),
	// "host:port", "*.domain" (any host under domain, port 443),
	// "*.domain:port", or OriginsPublic for any public host on any port.
	// Empty: OriginsDefault.
	Origins []string
	// PrivateNetworks are the prefixes that may be dialled although not
	// public unicast (a local fake: 127.0.0.0/8). An endpoint in one must
	// still be allowed by Origins.
	PrivateNetworks []netip.Prefix
}

// OriginsDefault is the browser vendors' push services: Chrome's (FCM),
// Firefox's (Mozilla autopush), Edge's (WNS) and Safari's (Apple).
const OriginsDefault = "fcm.googleapis.com,updates.push.services.mozilla.com,*.push.services.mozilla.com,*.notify.windows.com,web.push.apple.com,*.push.apple.com"

// OriginsPublic, as an entry of Egress.Origins, allows any host on any port
// whose addresses are public unicast (UnifiedPush distributors).
const OriginsPublic = "public"

// EgressError is an endpoint or an address the egress policy refuses. It
// names the host and the rule, never the endpoint's path (a secret of the
// subscription).
type EgressError struct {
	// Host is the endpoint's host or the dialled address.
	Host string
	// Rule says which rule refuses it: "is loopback".
	Rule string
}

func (e *EgressError) Error() string {
	if e.Host == "" {
		return "endpoint " + e.Rule
	}
	return "endpoint " + e.Host + " " + e.Rule
}

// EgressPolicy is an Egress ready to check endpoints and addresses. It is
// safe for concurrent use.
type EgressPolicy struct {
	public   bool
	hosts    map[string]bool // "host:port", host lower-cased
	suffixes []string        // ".domain:port" of "*.domain" entries
	private  []netip.Prefix
}

// NewEgressPolicy checks e's origins and builds its policy.
func NewEgressPolicy(e Egress) (*EgressPolicy, error) {
	var origins []string
	for _, o := range e.Origins {
		if o = strings.ToLower(strings.TrimSpace(o)); o != "" {
			origins = append(origins, o)
		}
	}
	if len(origins) == 0 {
		origins = strings.Split(OriginsDefault, ",")
	}
	p := &EgressPolicy{hosts: map[string]bool{}, private: slices.Clone(e.PrivateNetworks)}
	for _, o := range origins {
		if o == OriginsPublic {
			p.public = true
			continue
		}
		key, err := originEntry(o)
		if err != nil {
			return nil, fmt.Errorf("origin %q: %w", o, err)
		}
		if rest, ok := strings.CutPrefix(key, "*."); ok {
			p.suffixes = append(p.suffixes, "."+rest)
		} else {
			p.hosts[key] = true
		}
	}
	return p, nil
}

// originEntry is an Origins entry as "host:port", the port 443 when it has
// none.
func originEntry(o string) (string, error) {
	if strings.Contains(o, "/") {
		return "", errors.New("want a host or host:port, not a URL")
	}
	host, port := o, "443"
	if h, pt, err := net.SplitHostPort(o); err == nil {
		host, port = h, pt
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q is not 1 to 65535", port)
	}
	name := strings.TrimPrefix(host, "*.")
	if _, err := netip.ParseAddr(name); err != nil && (name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "") {
		return "", errors.New(`want a host name or address; a wildcard is a "*." prefix`)
	}
	return net.JoinHostPort(host, port), nil
}

// CheckToken reports the policy's objection to a webpush device token's
// endpoint as an *EgressError, or nil. A token that is not a subscription
// is payload.Validate's to refuse: nil here.
func (p *EgressPolicy) CheckToken(token string) error {
	sub, _, err := payload.ParseWebPushSubscription(token)
	if err != nil {
		return nil
	}
	_, err = p.CheckEndpoint(sub.Endpoint)
	return err
}

// CheckEndpoint checks a subscription's endpoint and returns its origin as
// a push service computes it for a VAPID JWT's aud (RFC 8292 §2): scheme,
// host lower-cased and the port unless it is 443. It refuses, as an
// *EgressError, an endpoint that is not https, carries userinfo, names its
// host by an IP address that is not public unicast (unless in
// PrivateNetworks) or by a numeric form other than dotted decimal, or
// whose host and port Origins does not allow.
func (p *EgressPolicy) CheckEndpoint(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return "", &EgressError{Rule: "is not a URL"}
	case u.Scheme != "https":
		return "", &EgressError{Rule: "must be an https URL"}
	case u.User != nil:
		return "", &EgressError{Rule: "must not carry userinfo"}
	case u.Hostname() == "":
		return "", &EgressError{Rule: "has no host"}
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = "443"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", &EgressError{Host: host, Rule: "has port " + strconv.Quote(port) + ", not 1 to 65535"}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(ip); err != nil {
			return "", err
		}
	} else if endsInNumber(host) {
		return "", &EgressError{Host: host, Rule: "is an IPv4 address in a numeric form other than dotted decimal"}
	}
	if !p.allows(host, port) {
		rule := "is not an allowed push-service origin (HUSH_WEBPUSH_ORIGINS)"
		if port != "443" {
			rule = "has port " + port + ", which HUSH_WEBPUSH_ORIGINS does not allow for it (only 443 unless host:port is listed)"
		}
		return "", &EgressError{Host: host, Rule: rule}
	}
	origin := "https://" + host
	if strings.Contains(host, ":") {
		origin = "https://[" + host + "]"
	}
	if port != "443" {
		origin += ":" + port
	}
	return origin, nil
}

// allows reports whether Origins allows host (lower-cased) on port.
func (p *EgressPolicy) allows(host, port string) bool {
	if p.public {
		return true
	}
	key := net.JoinHostPort(host, port)
	if p.hosts[key] {
		return true
	}
	for _, s := range p.suffixes {
		// s is ".domain:port": host must be a name under domain.
		if strings.HasSuffix(key, s) && len(key) > len(s) {
			return true
		}
	}
	return false
}

// endsInNumber reports whether a URL parser of the WHATWG standard (every
// browser's) reads host as an IPv4 address: its last label is decimal
// digits or 0x and hex digits ("2130706433", "0x7f.1", "127.1").
func endsInNumber(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return false
}

// CheckAddr refuses, as an *EgressError, an address that is not public
// unicast unless PrivateNetworks holds it.
func (p *EgressPolicy) CheckAddr(ip netip.Addr) error {
	if ip.Zone() != "" {
		return &EgressError{Host: ip.String(), Rule: "has an IPv6 zone"}
	}
	for _, n := range p.private {
		if n.Contains(ip) || n.Contains(ip.Unmap()) {
			return nil
		}
	}
	if rule := addrRule(ip); rule != "" {
		return &EgressError{Host: ip.String(), Rule: rule + " (not public unicast; HUSH_WEBPUSH_PRIVATE_NETWORKS can allow a private network)"}
	}
	return nil
}

// Special-purpose ranges netip has no predicate for.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	reserved    = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
		netip.MustParsePrefix("::/96"),           // IPv4-compatible
		netip.MustParsePrefix("100::/64"),        // discard
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
	}
	// nat64 and sixTo4 carry an IPv4 address (in the low 32 bits, and in
	// bits 16 to 48): the IPv4 address is judged too.
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// addrRule names why ip is not public unicast, or returns "".
func addrRule(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "is loopback"
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return "is in 0.0.0.0/8 (this network)"
	case ip.IsPrivate() && ip.Is4():
		return "is private (RFC 1918)"
	case ip.IsPrivate():
		return "is unique local (fc00::/7)"
	case sharedSpace.Contains(ip):
		return "is shared address space (100.64.0.0/10, CGNAT)"
	case ip.IsLinkLocalUnicast():
		return "is link-local (169.254.0.0/16 or fe80::/10, where cloud metadata answers)"
	case ip.IsMulticast():
		return "is multicast"
	case nat64.Contains(ip):
		b := ip.As16()
		return embedded(netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(ip):
		b := ip.As16()
		return embedded(netip.AddrFrom4([4]byte(b[2:6])))
	case !ip.IsGlobalUnicast():
		return "is not unicast"
	}
	for _, r := range reserved {
		if r.Contains(ip) {
			return "is reserved (" + r.String() + ")"
		}
	}
	return ""
}

func embedded(v4 netip.Addr) string {
	if rule := addrRule(v4); rule != "" {
		return "embeds " + v4.String() + ", which " + rule
	}
	return ""
}

// control is the net.Dialer Control hook: it refuses each resolved
// address the policy refuses, so a name that resolves (or rebinds) to a
// private address is never connected to.
func (p *EgressPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &EgressError{Host: address, Rule: "is not an IP address and port"}
	}
	return p.CheckAddr(ap.Addr())
}

// dialer is a net.Dialer whose every connection the policy checks.
func (p *EgressPolicy) dialer() *net.Dialer {
	return &net.Dialer{Timeout: providers.CallTimeout, Control: p.control}
}

// refused returns the *EgressError in a failed request's error.
func refused(err error) (*EgressError, bool) { return errors.AsType[*EgressError](err) }
