package deploy

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// rule names one thing the manifests must get right, so tests can say which
// check a broken manifest trips.
type rule string

const (
	ruleShape        rule = "one Deployment with one container and its Service; at most one ScaledObject and one PDB"
	ruleNamespace    rule = "one Namespace, holding every object"
	ruleProbes       rule = "readiness on /readyz, liveness on /healthz, on the container's HTTP port"
	ruleEnvKeys      rule = "every environment variable is a known HUSH_* key"
	ruleRefs         rule = "every Secret, key and ConfigMap referenced exists"
	ruleCredFiles    rule = "credential file variables point at mounted Secret items"
	ruleResources    rule = "CPU and memory requests set, memory limit not below the request"
	ruleSecurity     rule = "non-root, read-only root, no privilege escalation, ALL caps dropped, RuntimeDefault seccomp"
	ruleGrace        rule = "termination grace period covers HUSH_SHUTDOWN_TIMEOUT plus the HTTP shutdown"
	ruleReplicas     rule = "the Deployment leaves replicas to the ScaledObject"
	ruleSelectors    rule = "Deployment, PDB and Service selectors match the pod labels"
	ruleService      rule = "the Service exposes the container's HTTP (metrics) port"
	rulePDB          rule = "the PDB allows a drain at the minimum replica count"
	ruleScaleTarget  rule = "the ScaledObject targets the Deployment, with valid bounds"
	ruleTriggers     rule = "one redis trigger per queue served (HUSH_QUEUES, with HUSH_DELIVERY_SHARDS) on asynq:{queue}:pending"
	ruleTriggerAuths rule = "trigger authentications exist and give KEDA the Redis address"
	ruleRedis        rule = "a Redis 7 StatefulSet with AOF on a PVC, noeviction, a redis-cli ping readiness probe, behind the headless Service HUSH_REDIS_URL names"
	ruleProduction   rule = "production: KEDA and a PDB, a provider's credentials from Secrets created by hand, no Secret rendered, not dry-run"
	ruleDryRun       rule = "dry-run: HUSH_DRY_RUN=true, no provider credential, no CRD, every Secret it reads rendered by the overlay"
)

type violation struct {
	rule   rule
	detail string
}

func (v violation) String() string { return string(v.rule) + ": " + v.detail }

// checker collects violations.
type checker struct{ found []violation }

func (c *checker) errorf(r rule, format string, args ...any) {
	c.found = append(c.found, violation{rule: r, detail: fmt.Sprintf(format, args...)})
}

// httpShutdown is how long hush serve waits for the HTTP server to close
// after the worker stopped (setup/serve.go); terminationMargin is left for
// the endpoints to drop the pod and the kubelet to act.
const (
	httpShutdown      = 5 * time.Second
	terminationMargin = 5 * time.Second
	defaultShutdown   = 10 * time.Second // HUSH_SHUTDOWN_TIMEOUT's default
	defaultHTTPAddr   = ":8080"          // HUSH_HTTP_ADDR's default
	defaultQueues     = "critical:6,high:3,normal:1"
)

// credentialFileKeys are the variables that name a file hush reads.
var credentialFileKeys = []string{"HUSH_APNS_KEY_FILE", "HUSH_APNS_CERT_FILE", "HUSH_APNS_CA_FILE", "HUSH_FCM_CREDENTIALS_FILE"}

// redisTriggerMetadata are the metadata keys KEDA's redis scaler reads
// (pkg/scalers/redis_scaler.go, KEDA v2.21): metadata is a free map, so a
// misspelt key would otherwise pass silently.
var redisTriggerMetadata = []string{
	"address", "addresses", "host", "hosts", "port", "ports", "username", "password",
	"listName", "listLength", "activationListLength", "databaseIndex", "enableTLS", "unsafeSsl",
	"addressFromEnv", "hostFromEnv", "portFromEnv", "usernameFromEnv", "passwordFromEnv",
}

// checkOverlay runs every check on an overlay's bundle: those every
// installation must pass, then the overlay's own. It returns what it found,
// in a stable order.
func checkOverlay(b *bundle) []violation {
	c := &checker{}
	if len(b.deployments) != 1 || len(b.deployments[0].Spec.Template.Spec.Containers) != 1 ||
		b.service(b.deployments[0].Name) == nil || len(b.scaledObjects) > 1 || len(b.pdbs) > 1 {
		c.errorf(ruleShape, "got %d Deployments, %d Services, %d ScaledObjects, %d PDBs",
			len(b.deployments), len(b.services), len(b.scaledObjects), len(b.pdbs))
		return c.found
	}
	d := b.deployments[0]
	env := b.containerEnv(c, &d.Spec.Template.Spec.Containers[0])
	c.checkNamespace(b)
	c.checkPod(b, d, env)
	c.checkSelectors(b, d)
	c.checkScaledObject(b, d, env)
	c.checkPDB(b, d)
	c.checkRedis(b, env)
	switch b.overlay {
	case overlayProduction:
		c.checkProduction(b, env)
	case overlayDryRun:
		c.checkDryRun(b, env)
	default:
		c.errorf(ruleShape, "overlay %q has no checks of its own: add them to checkOverlay", b.overlay)
	}
	return c.found
}

// resolveEnv returns the container's environment: the ConfigMaps of envFrom
// overlaid by env, with values from Secrets and ConfigMaps looked up in the
// bundle ("" when the key is missing, which it reports).
func (b *bundle) resolveEnv(c *checker, ctr *corev1.Container) map[string]string {
	env := map[string]string{}
	for _, from := range ctr.EnvFrom {
		switch {
		case from.Prefix != "":
			c.errorf(ruleEnvKeys, "envFrom prefix %q renames every key", from.Prefix)
		case from.ConfigMapRef != nil:
			cm := b.configMap(from.ConfigMapRef.Name)
			if cm == nil {
				c.errorf(ruleRefs, "envFrom: no ConfigMap %q", from.ConfigMapRef.Name)
				continue
			}
			maps.Copy(env, cm.Data)
		default:
			c.errorf(ruleRefs, "envFrom: only ConfigMaps are expected (Secrets go through secretKeyRef)")
		}
	}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
		if e.ValueFrom == nil {
			continue
		}
		switch ref := e.ValueFrom; {
		case ref.SecretKeyRef != nil:
			v, ok := b.secretValue(ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			if !ok {
				c.errorf(ruleRefs, "%s %s: Secret %q has no key %q (rendered or in %s)", ctr.Name, e.Name, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key, secretExampleFile)
			}
			env[e.Name] = v
		case ref.ConfigMapKeyRef != nil:
			cm := b.configMap(ref.ConfigMapKeyRef.Name)
			if cm == nil || !hasKey(cm.Data, ref.ConfigMapKeyRef.Key) {
				c.errorf(ruleRefs, "%s %s: ConfigMap %q has no key %q", ctr.Name, e.Name, ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key)
				continue
			}
			env[e.Name] = cm.Data[ref.ConfigMapKeyRef.Key]
		}
	}
	return env
}

// containerEnv is hush's environment (resolveEnv), every key of which, and
// of every ConfigMap, must be a key hush reads.
func (b *bundle) containerEnv(c *checker, ctr *corev1.Container) map[string]string {
	env := b.resolveEnv(c, ctr)
	for _, k := range sortedKeys(env) {
		if !isKnownKey(k) {
			c.errorf(ruleEnvKeys, "%s is not a HUSH_* key hush reads", k)
		}
	}
	for _, cm := range b.configMaps {
		for _, k := range sortedKeys(cm.Data) {
			if !isKnownKey(k) {
				c.errorf(ruleEnvKeys, "ConfigMap %s: %s is not a HUSH_* key hush reads", cm.Name, k)
			}
		}
	}
	return env
}

// checkNamespace: kubectl apply -k puts everything in the one Namespace it
// creates, which the Redis URL's host names.
func (c *checker) checkNamespace(b *bundle) {
	if len(b.namespaces) != 1 {
		c.errorf(ruleNamespace, "%d Namespaces, want 1", len(b.namespaces))
		return
	}
	ns := b.namespaces[0].Name
	for _, o := range b.objects {
		if o.GetNamespace() != ns {
			c.errorf(ruleNamespace, "%s is in namespace %q, not %q", o.GetName(), o.GetNamespace(), ns)
		}
	}
}

func (c *checker) checkPod(b *bundle, d *appsv1.Deployment, env map[string]string) {
	pod := &d.Spec.Template.Spec
	ctr := &pod.Containers[0]

	addr := valueOr(env, "HUSH_HTTP_ADDR", defaultHTTPAddr)
	_, portStr, err := net.SplitHostPort(addr)
	httpPort, convErr := strconv.Atoi(portStr)
	if err != nil || convErr != nil {
		c.errorf(ruleProbes, "HUSH_HTTP_ADDR %q has no port", addr)
	}
	hasPort := slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == httpPort })
	if !hasPort {
		c.errorf(ruleProbes, "no container port %d (HUSH_HTTP_ADDR %q)", httpPort, addr)
	}
	probes := []struct {
		name, path string
		probe      *corev1.Probe
	}{
		{"readinessProbe", "/readyz", ctr.ReadinessProbe},
		{"livenessProbe", "/healthz", ctr.LivenessProbe},
		{"startupProbe", "/healthz", ctr.StartupProbe},
	}
	for _, p := range probes {
		if p.probe == nil {
			if p.name != "startupProbe" {
				c.errorf(ruleProbes, "no %s", p.name)
			}
			continue
		}
		get := p.probe.HTTPGet
		if get == nil {
			c.errorf(ruleProbes, "%s is not an httpGet", p.name)
			continue
		}
		if get.Path != p.path {
			c.errorf(ruleProbes, "%s path %q, want %q", p.name, get.Path, p.path)
		}
		if got, ok := resolvePort(ctr, get.Port); !ok || got != httpPort {
			c.errorf(ruleProbes, "%s port %s is not the HTTP port %d", p.name, get.Port.String(), httpPort)
		}
	}

	for _, key := range credentialFileKeys {
		if file, ok := env[key]; ok {
			if !b.mountedSecretItem(pod, ctr, file) {
				c.errorf(ruleCredFiles, "%s=%q is not an item of a Secret volume mounted in the container", key, file)
			}
		}
	}
	for _, v := range pod.Volumes {
		if s := v.Secret; s != nil {
			for _, it := range s.Items {
				if !b.secretHasKey(s.SecretName, it.Key) {
					c.errorf(ruleRefs, "volume %s: Secret %q has no key %q (rendered or in %s)", v.Name, s.SecretName, it.Key, secretExampleFile)
				}
			}
		}
	}

	c.checkResources(ctr)
	c.checkSecurity(pod, ctr)

	shutdown := defaultShutdown
	if s, ok := env["HUSH_SHUTDOWN_TIMEOUT"]; ok {
		if shutdown, err = time.ParseDuration(s); err != nil {
			c.errorf(ruleGrace, "HUSH_SHUTDOWN_TIMEOUT %q: %v", s, err)
		}
	}
	grace := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if need := shutdown + httpShutdown + terminationMargin; grace < need {
		c.errorf(ruleGrace, "terminationGracePeriodSeconds %s < %s (HUSH_SHUTDOWN_TIMEOUT %s + HTTP %s + margin %s)",
			grace, need, shutdown, httpShutdown, terminationMargin)
	}

}

// checkResources: requests for scheduling, and no memory limit below them.
func (c *checker) checkResources(ctr *corev1.Container) {
	req := ctr.Resources.Requests
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		c.errorf(ruleResources, "%s requests: cpu %s, memory %s", ctr.Name, req.Cpu(), req.Memory())
	}
	if lim := ctr.Resources.Limits.Memory(); !lim.IsZero() && lim.Cmp(*req.Memory()) < 0 {
		c.errorf(ruleResources, "%s memory limit %s below the request %s", ctr.Name, lim, req.Memory())
	}
}

// checkSecurity: what the namespace's "restricted" Pod Security Standard
// demands, and a read-only root filesystem.
func (c *checker) checkSecurity(pod *corev1.PodSpec, ctr *corev1.Container) {
	psc, sc := pod.SecurityContext, ctr.SecurityContext
	switch {
	case psc == nil || sc == nil:
		c.errorf(ruleSecurity, "%s: pod and container securityContext must both be set", ctr.Name)
	case !isTrue(psc.RunAsNonRoot) && !isTrue(sc.RunAsNonRoot):
		c.errorf(ruleSecurity, "%s: runAsNonRoot is not set", ctr.Name)
	case (psc.RunAsUser != nil && *psc.RunAsUser == 0) || (sc.RunAsUser != nil && *sc.RunAsUser == 0):
		c.errorf(ruleSecurity, "%s: runAsUser 0", ctr.Name)
	case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		c.errorf(ruleSecurity, "%s: pod seccompProfile is not RuntimeDefault", ctr.Name)
	case !isTrue(sc.ReadOnlyRootFilesystem):
		c.errorf(ruleSecurity, "%s: readOnlyRootFilesystem is not true", ctr.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		c.errorf(ruleSecurity, "%s: allowPrivilegeEscalation is not false", ctr.Name)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		c.errorf(ruleSecurity, "%s: capabilities must drop ALL and add none", ctr.Name)
	}
}

func (c *checker) checkSelectors(b *bundle, d *appsv1.Deployment) {
	podLabels := labels.Set(d.Spec.Template.Labels)
	matches := func(what string, sel *metav1.LabelSelector) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			c.errorf(ruleSelectors, "%s: %v", what, err)
		case s.Empty():
			c.errorf(ruleSelectors, "%s selects every pod in the namespace", what)
		case !s.Matches(podLabels):
			c.errorf(ruleSelectors, "%s %s does not match the pod labels %s", what, s, podLabels)
		}
	}
	matches("Deployment selector", d.Spec.Selector)
	for _, pdb := range b.pdbs {
		matches("PodDisruptionBudget "+pdb.Name, pdb.Spec.Selector)
	}
	svc := b.service(d.Name)
	matches("Service "+svc.Name, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})

	// Each StatefulSet owns its pods, and hush's selectors leave them alone:
	// a Deployment that matched Redis's pods would fight over them.
	for _, ss := range b.statefulSets {
		ssLabels := labels.Set(ss.Spec.Template.Labels)
		if s, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector); err != nil || s.Empty() || !s.Matches(ssLabels) {
			c.errorf(ruleSelectors, "StatefulSet %s selector %v does not match its pod labels %s", ss.Name, ss.Spec.Selector, ssLabels)
		}
		hushSelectors := []*metav1.LabelSelector{d.Spec.Selector, {MatchLabels: svc.Spec.Selector}}
		for _, pdb := range b.pdbs {
			hushSelectors = append(hushSelectors, pdb.Spec.Selector)
		}
		for _, sel := range hushSelectors {
			if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && s.Matches(ssLabels) {
				c.errorf(ruleSelectors, "hush's selector %s also matches StatefulSet %s's pods", s, ss.Name)
			}
		}
	}

	ctr := &d.Spec.Template.Spec.Containers[0]
	httpPort, _ := resolvePort(ctr, intstr.FromString("http"))
	exposed := slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port) // targetPort defaults to port
		}
		got, ok := resolvePort(ctr, target)
		return ok && got == httpPort
	})
	if httpPort == 0 || !exposed {
		c.errorf(ruleService, "Service %s does not reach the container port named http", svc.Name)
	}
}

// checkScaledObject checks the ScaledObject, when there is one, and the
// TriggerAuthentications.
func (c *checker) checkScaledObject(b *bundle, d *appsv1.Deployment, env map[string]string) {
	c.checkTriggerAuths(b)
	if len(b.scaledObjects) == 0 {
		return
	}
	so := b.scaledObjects[0]
	ref := so.Spec.ScaleTargetRef
	if ref == nil || ref.Name != d.Name || (ref.Kind != "" && ref.Kind != "Deployment") || (ref.APIVersion != "" && ref.APIVersion != "apps/v1") {
		c.errorf(ruleScaleTarget, "scaleTargetRef %+v is not Deployment %q", ref, d.Name)
	}
	if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
		c.errorf(ruleScaleTarget, "%v", err)
	}
	// The pods serve the API too: scaling to zero would take it down.
	minReplicas := int32(0)
	if so.Spec.MinReplicaCount != nil {
		minReplicas = *so.Spec.MinReplicaCount
	}
	if minReplicas < 1 {
		c.errorf(ruleScaleTarget, "minReplicaCount %d: the pods serve the HTTP API", minReplicas)
	}
	if d.Spec.Replicas != nil {
		c.errorf(ruleReplicas, "spec.replicas is %d: a re-apply would reset what KEDA scaled to", *d.Spec.Replicas)
	}

	if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
		c.errorf(ruleTriggers, "%v", err)
	}
	wantQueues, err := queueNames(valueOr(env, "HUSH_QUEUES", defaultQueues))
	if err != nil {
		c.errorf(ruleTriggers, "HUSH_QUEUES: %v", err)
	}
	shards, err := strconv.Atoi(valueOr(env, "HUSH_DELIVERY_SHARDS", "1"))
	if err != nil || shards < 1 {
		c.errorf(ruleTriggers, "HUSH_DELIVERY_SHARDS %q is not a positive integer", env["HUSH_DELIVERY_SHARDS"])
	}
	wantQueues = withShards(wantQueues, shards)
	var gotQueues []string
	for _, tr := range so.Spec.Triggers {
		name := cmp.Or(tr.Name, tr.Type)
		if tr.Type != "redis" {
			c.errorf(ruleTriggers, "trigger %s: type %q, want redis", name, tr.Type)
			continue
		}
		for _, k := range sortedKeys(tr.Metadata) {
			if !slices.Contains(redisTriggerMetadata, k) {
				c.errorf(ruleTriggers, "trigger %s: the redis scaler has no metadata %q", name, k)
			}
		}
		m := pendingList.FindStringSubmatch(tr.Metadata["listName"])
		if m == nil {
			c.errorf(ruleTriggers, "trigger %s: listName %q is not asynq:{queue}:pending", name, tr.Metadata["listName"])
		} else {
			gotQueues = append(gotQueues, m[1])
		}
		if n, err := strconv.Atoi(tr.Metadata["listLength"]); err != nil || n <= 0 {
			c.errorf(ruleTriggers, "trigger %s: listLength %q is not a positive integer", name, tr.Metadata["listLength"])
		}
		if tr.AuthenticationRef == nil || b.triggerAuth(tr.AuthenticationRef.Name) == nil ||
			(tr.AuthenticationRef.Kind != "" && tr.AuthenticationRef.Kind != "TriggerAuthentication") {
			c.errorf(ruleTriggerAuths, "trigger %s: authenticationRef %+v names no TriggerAuthentication here", name, tr.AuthenticationRef)
		}
	}
	slices.Sort(gotQueues)
	if !slices.Equal(gotQueues, wantQueues) {
		c.errorf(ruleTriggers, "triggers watch queues %v, HUSH_QUEUES and HUSH_DELIVERY_SHARDS serve %v", gotQueues, wantQueues)
	}
}

func (c *checker) checkTriggerAuths(b *bundle) {
	for _, ta := range b.triggerAuths {
		var params []string
		for _, s := range ta.Spec.SecretTargetRef {
			params = append(params, s.Parameter)
			if !b.secretHasKey(s.Name, s.Key) {
				c.errorf(ruleRefs, "TriggerAuthentication %s: Secret %q has no key %q (rendered or in %s)", ta.Name, s.Name, s.Key, secretExampleFile)
			}
		}
		if !slices.Contains(params, "address") && !slices.Contains(params, "host") {
			c.errorf(ruleTriggerAuths, "TriggerAuthentication %s gives KEDA no Redis address or host", ta.Name)
		}
	}
}

// checkPDB: a PodDisruptionBudget must let a drain evict a pod at the
// fewest replicas hush runs (the ScaledObject's minimum, else the
// Deployment's replicas).
func (c *checker) checkPDB(b *bundle, d *appsv1.Deployment) {
	if len(b.pdbs) == 0 {
		return
	}
	minReplicas := int32(1) // spec.replicas' default
	switch {
	case len(b.scaledObjects) == 1 && b.scaledObjects[0].Spec.MinReplicaCount != nil:
		minReplicas = *b.scaledObjects[0].Spec.MinReplicaCount
	case len(b.scaledObjects) == 1:
		minReplicas = 0 // KEDA's default
	case d.Spec.Replicas != nil:
		minReplicas = *d.Spec.Replicas
	}
	pdb := b.pdbs[0]
	if ma := pdb.Spec.MinAvailable; ma != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(ma, int(minReplicas), true)
		if err != nil || n >= int(minReplicas) {
			c.errorf(rulePDB, "minAvailable %s of %d replicas blocks every eviction", ma.String(), minReplicas)
		}
	} else if mu := pdb.Spec.MaxUnavailable; mu == nil || (mu.Type == intstr.Int && mu.IntVal == 0) {
		c.errorf(rulePDB, "neither minAvailable nor a non-zero maxUnavailable")
	}
}

// pendingList matches Asynq's pending list key of one queue (a priority,
// or one of its delivery shards "<priority>.<k>").
var pendingList = regexp.MustCompile(`^asynq:\{([a-z]+(?:\.[0-9]+)?)\}:pending$`)

// withShards adds the shard queues "<queue>.0" ... of each queue, sorted,
// as hush serve does with HUSH_DELIVERY_SHARDS above 1.
func withShards(queues []string, shards int) []string {
	out := slices.Clone(queues)
	if shards > 1 {
		for _, q := range queues {
			for k := range shards {
				out = append(out, q+"."+strconv.Itoa(k))
			}
		}
	}
	slices.Sort(out)
	return out
}

// queueNames returns the sorted queue names of a HUSH_QUEUES value.
func queueNames(s string) ([]string, error) {
	var names []string
	for part := range strings.SplitSeq(s, ",") {
		name, weight, ok := strings.Cut(part, ":")
		if _, err := strconv.Atoi(weight); !ok || err != nil || name == "" {
			return nil, fmt.Errorf("%q is not queue:weight", part)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// resolvePort returns the container port a probe or Service port refers to.
func resolvePort(ctr *corev1.Container, p intstr.IntOrString) (int, bool) {
	if p.Type == intstr.Int {
		return int(p.IntVal), slices.ContainsFunc(ctr.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == p.IntVal })
	}
	for _, cp := range ctr.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), true
		}
	}
	return 0, false
}

// mountedSecretItem reports whether file is an item of a Secret volume
// mounted in ctr, with a key the example Secret has.
func (b *bundle) mountedSecretItem(pod *corev1.PodSpec, ctr *corev1.Container, file string) bool {
	for _, m := range ctr.VolumeMounts {
		rel, ok := strings.CutPrefix(path.Clean(file), path.Clean(m.MountPath)+"/")
		if !ok || m.SubPath != "" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return b.secretHasKey(v.Secret.SecretName, rel)
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return b.secretHasKey(v.Secret.SecretName, it.Key)
				}
			}
		}
	}
	return false
}

func (b *bundle) configMap(name string) *corev1.ConfigMap {
	for _, cm := range b.configMaps {
		if cm.Name == name {
			return cm
		}
	}
	return nil
}

// secret returns the Secret the overlay renders, else the one its example
// documents.
func (b *bundle) secret(name string) *corev1.Secret {
	for _, s := range slices.Concat(b.secrets, b.exampleSecrets) {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (b *bundle) secretHasKey(name, key string) bool {
	_, ok := b.secretValue(name, key)
	return ok
}

// secretValue is one key of a Secret (stringData wins over data, as the API
// server merges them).
func (b *bundle) secretValue(name, key string) (string, bool) {
	s := b.secret(name)
	if s == nil {
		return "", false
	}
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

func (b *bundle) service(name string) *corev1.Service {
	for _, s := range b.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (b *bundle) statefulSet(name string) *appsv1.StatefulSet {
	for _, s := range b.statefulSets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (b *bundle) triggerAuth(name string) *kedav1alpha1.TriggerAuthentication {
	for _, ta := range b.triggerAuths {
		if ta.Name == name {
			return ta
		}
	}
	return nil
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func valueOr(env map[string]string, key, def string) string {
	if v, ok := env[key]; ok {
		return v
	}
	return def
}

func isTrue(b *bool) bool { return b != nil && *b }
