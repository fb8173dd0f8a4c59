package deploy

import (
	"cmp"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// redisStatefulSet is the example Redis (kubernetes/redis/).
const redisStatefulSet = "redis"

// redisDefaultPort is where redis-server listens without --port.
const redisDefaultPort = 6379

// checkRedis checks the example Redis and that hush (HUSH_REDIS_URL) and
// KEDA (its TriggerAuthentications) reach it with its password.
func (c *checker) checkRedis(b *bundle, hushEnv map[string]string) {
	ss := b.statefulSet(redisStatefulSet)
	if ss == nil {
		c.errorf(ruleRedis, "no StatefulSet %q", redisStatefulSet)
		return
	}
	if ss.Spec.Replicas != nil && *ss.Spec.Replicas != 1 {
		c.errorf(ruleRedis, "StatefulSet %s: %d replicas would be separate, unreplicated servers", ss.Name, *ss.Spec.Replicas)
	}
	pod := &ss.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		c.errorf(ruleRedis, "StatefulSet %s: %d containers, want 1", ss.Name, len(pod.Containers))
		return
	}
	ctr := &pod.Containers[0]
	if !strings.HasPrefix(ctr.Image, "redis:7") {
		c.errorf(ruleRedis, "image %q is not Redis 7", ctr.Image)
	}
	env := b.resolveEnv(c, ctr)
	opts, ok := redisOptions(ctr, env)
	if !ok {
		c.errorf(ruleRedis, "%s does not run redis-server with its options as arguments", ctr.Name)
		return
	}
	if opts["appendonly"] != "yes" {
		c.errorf(ruleRedis, "appendonly is %q: without AOF a restart loses the queues and the limiter's state", opts["appendonly"])
	}
	// Asynq and the limiter must never have keys evicted; noeviction is
	// Redis's default.
	if p, ok := opts["maxmemory-policy"]; ok && p != "noeviction" {
		c.errorf(ruleRedis, "maxmemory-policy %s evicts keys; want noeviction", p)
	}
	if lim := ctr.Resources.Limits.Memory(); opts["maxmemory"] != "" && !lim.IsZero() {
		n, err := redisBytes(opts["maxmemory"])
		if err != nil || n <= 0 || n >= lim.Value() {
			c.errorf(ruleRedis, "maxmemory %q is not below the memory limit %s: the kernel would kill Redis before it refuses writes", opts["maxmemory"], lim)
		}
	}

	// The data directory is a volume from a claim template.
	dir := path.Clean(valueOr(opts, "dir", "/data")) // the image's WORKDIR
	claims := ss.Spec.VolumeClaimTemplates
	if len(claims) == 0 {
		c.errorf(ruleRedis, "StatefulSet %s has no volumeClaimTemplates: the AOF would die with the pod", ss.Name)
	}
	for _, pvc := range claims {
		if st := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; st.IsZero() {
			c.errorf(ruleRedis, "volumeClaimTemplate %s requests no storage", pvc.Name)
		}
		if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOnce) && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOncePod) {
			c.errorf(ruleRedis, "volumeClaimTemplate %s: access modes %v, want ReadWriteOnce", pvc.Name, pvc.Spec.AccessModes)
		}
	}
	onClaim := slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
		return path.Clean(m.MountPath) == dir && m.SubPath == "" && !m.ReadOnly &&
			slices.ContainsFunc(claims, func(pvc corev1.PersistentVolumeClaim) bool { return pvc.Name == m.Name })
	})
	if !onClaim {
		c.errorf(ruleRedis, "the data directory %s is not a volume of a volumeClaimTemplate", dir)
	}

	port, err := strconv.Atoi(valueOr(opts, "port", strconv.Itoa(redisDefaultPort)))
	if err != nil || !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == port }) {
		c.errorf(ruleRedis, "no container port for Redis's port %q", valueOr(opts, "port", strconv.Itoa(redisDefaultPort)))
	}

	password, hasPassword := opts["requirepass"]
	if p := ctr.ReadinessProbe; p == nil || p.Exec == nil || !isRedisCLIPing(p.Exec.Command) {
		c.errorf(ruleRedis, "the readiness probe is not an exec of redis-cli ping")
	} else if hasPassword && env["REDISCLI_AUTH"] != password && !slices.Contains(p.Exec.Command, "-a") {
		c.errorf(ruleRedis, "the readiness probe's redis-cli has no password (REDISCLI_AUTH): it would read NOAUTH, never PONG")
	}
	c.checkResources(ctr)
	c.checkSecurity(pod, ctr)

	// The headless Service the StatefulSet names, and which the URL names.
	svc := b.service(ss.Spec.ServiceName)
	if svc == nil {
		c.errorf(ruleRedis, "StatefulSet %s: serviceName %q names no Service", ss.Name, ss.Spec.ServiceName)
		return
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		c.errorf(ruleRedis, "Service %s is not headless (clusterIP %q)", svc.Name, svc.Spec.ClusterIP)
	}
	if sel := labels.SelectorFromSet(svc.Spec.Selector); len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(ss.Spec.Template.Labels)) {
		c.errorf(ruleRedis, "Service %s selector %v does not match the Redis pods", svc.Name, svc.Spec.Selector)
	}
	svcPort := 0
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		if got, ok := resolvePort(ctr, target); ok && got == port {
			svcPort = int(p.Port)
		}
	}
	if svcPort == 0 {
		c.errorf(ruleRedis, "Service %s does not reach Redis's port %d", svc.Name, port)
	}

	// hush's URL: the Service's DNS name and port, and the password.
	raw := hushEnv["HUSH_REDIS_URL"]
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		c.errorf(ruleRedis, "HUSH_REDIS_URL %q is not a redis:// URL", raw)
		return
	}
	if !slices.Contains(serviceDNSNames(svc.Name, ss.Namespace), u.Hostname()) {
		c.errorf(ruleRedis, "HUSH_REDIS_URL's host %q is not Service %s (%s)", u.Hostname(), svc.Name, strings.Join(serviceDNSNames(svc.Name, ss.Namespace), ", "))
	}
	if got := cmp.Or(u.Port(), strconv.Itoa(redisDefaultPort)); got != strconv.Itoa(svcPort) {
		c.errorf(ruleRedis, "HUSH_REDIS_URL's port %s is not Service %s's port %d", got, svc.Name, svcPort)
	}
	urlPassword, _ := u.User.Password()
	if hasPassword && urlPassword != password {
		c.errorf(ruleRedis, "HUSH_REDIS_URL's password is not Redis's requirepass")
	}

	// KEDA's view of the same server.
	for _, ta := range b.triggerAuths {
		for _, ref := range ta.Spec.SecretTargetRef {
			v, ok := b.secretValue(ref.Name, ref.Key)
			if !ok {
				continue // ruleRefs reports it
			}
			switch ref.Parameter {
			case "address":
				// KEDA's operator runs in its own namespace: a bare
				// Service name would not resolve there.
				qualified := serviceDNSNames(svc.Name, ss.Namespace)[1:]
				if h, p, err := net.SplitHostPort(v); err != nil || !slices.Contains(qualified, h) || p != strconv.Itoa(svcPort) {
					c.errorf(ruleRedis, "TriggerAuthentication %s: address %q is not Service %s's port %d by a namespace-qualified name", ta.Name, v, svc.Name, svcPort)
				}
			case "password":
				if hasPassword && v != password {
					c.errorf(ruleRedis, "TriggerAuthentication %s: the password is not Redis's requirepass", ta.Name)
				}
			}
		}
	}
}

// redisOptions returns the options redis-server is started with, "--name
// value..." as name: "value ...", after the kubelet expanded $(VAR) from
// env. ok is false when the container does not run redis-server.
func redisOptions(ctr *corev1.Container, env map[string]string) (opts map[string]string, ok bool) {
	argv := slices.Concat(ctr.Command, ctr.Args)
	i := slices.IndexFunc(argv, func(a string) bool { return path.Base(a) == "redis-server" })
	if i < 0 {
		return nil, false
	}
	opts = map[string]string{}
	name := ""
	for _, a := range argv[i+1:] {
		a = expandKubelet(a, env)
		if n, isOpt := strings.CutPrefix(a, "--"); isOpt {
			name = n
			opts[name] = ""
			continue
		}
		if name != "" {
			opts[name] = strings.TrimSpace(opts[name] + " " + a)
		}
	}
	return opts, true
}

// expandKubelet replaces $(NAME) with env's NAME, as the kubelet does in
// command and args (a name env lacks stays as written).
func expandKubelet(s string, env map[string]string) string {
	var out strings.Builder
	for {
		start := strings.Index(s, "$(")
		if start < 0 {
			break
		}
		end := strings.IndexByte(s[start:], ')')
		if end < 0 {
			break
		}
		name := s[start+2 : start+end]
		out.WriteString(s[:start])
		if v, ok := env[name]; ok {
			out.WriteString(v)
		} else {
			out.WriteString(s[start : start+end+1])
		}
		s = s[start+end+1:]
	}
	out.WriteString(s)
	return out.String()
}

// isRedisCLIPing reports whether an exec probe runs redis-cli ping (also
// through sh -c).
func isRedisCLIPing(command []string) bool {
	words := strings.Fields(strings.Join(command, " "))
	cli := slices.IndexFunc(words, func(w string) bool { return path.Base(w) == "redis-cli" })
	return cli >= 0 && slices.ContainsFunc(words[cli+1:], func(w string) bool { return strings.EqualFold(w, "ping") })
}

// redisBytes parses a Redis memory size: 1k is 1000 bytes, 1kb 1024.
func redisBytes(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		factor int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * u.factor, err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// serviceDNSNames are the names a pod in namespace ns reaches Service name by.
func serviceDNSNames(name, ns string) []string {
	return []string{name, name + "." + ns, name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"}
}
