package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	ktypes "sigs.k8s.io/kustomize/api/types"
)

// manifestFiles lists every .yaml file under kubeDir, sorted.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(kubeDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", kubeDir)
	}
	return files
}

// TestManifestsDecodeStrictly decodes every document of every file under
// kubernetes/ (resources, patches, kustomizations, example Secrets) into its
// real API type; unknown, misspelt or duplicate fields fail.
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, f := range manifestFiles(t) {
		t.Run(f, func(t *testing.T) {
			docs, err := readManifest(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				t.Logf("%s: %s", d.where, d.kind)
			}
		})
	}
}

// TestDecodeStrictRejects shows the decoding above is strict: each broken
// document is a small edit of a valid one.
func TestDecodeStrictRejects(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hush
spec:
  selector:
    matchLabels: {app: hush}
  template:
    metadata:
      labels: {app: hush}
    spec:
      containers:
        - name: hush
          image: hush
`
	const scaledObject = `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: hush
spec:
  scaleTargetRef:
    name: hush
  triggers:
    - type: redis
      metadata: {listName: "asynq:{normal}:pending"}
`
	tests := []struct {
		name    string
		doc     string
		wantErr bool
	}{
		{"valid Deployment", deployment, false},
		{"valid ScaledObject", scaledObject, false},
		{"unknown field", strings.Replace(deployment, "  selector:", "  replica: 2\n  selector:", 1), true},
		{"field in the wrong case", strings.Replace(deployment, "image: hush", "Image: hush", 1), true},
		{"duplicate field", strings.Replace(deployment, "image: hush", "image: hush\n          image: other", 1), true},
		{"field at the wrong level", strings.Replace(deployment, "      containers:", "      readinessProbe: {}\n      containers:", 1), true},
		{"wrong value type", strings.Replace(deployment, "  selector:", "  replicas: two\n  selector:", 1), true},
		{"unknown ScaledObject field", strings.Replace(scaledObject, "  triggers:", "  minReplicas: 2\n  triggers:", 1), true},
		{"unknown kind", strings.Replace(deployment, "kind: Deployment", "kind: Deploymnet", 1), true},
		{"unknown Kustomization field", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresource: [a.yaml]\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, _, err := decodeDocument([]byte(tt.doc))
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Errorf("decodeDocument (%s): error %v, want error: %t", kind, err, tt.wantErr)
			}
		})
	}
}

// TestKustomizationsUseEveryManifest: every manifest under kubernetes/ is
// a resource or a patch of exactly one kustomization, except the example
// Secrets, which none lists; every kustomization that is not an overlay is
// used by one; and the overlays are the ones checkOverlay knows.
func TestKustomizationsUseEveryManifest(t *testing.T) {
	uses := map[string][]string{} // file or directory -> kustomizations listing it
	var kustomizations, want []string
	for _, f := range manifestFiles(t) {
		if filepath.Base(f) != "kustomization.yaml" {
			if filepath.Base(f) != secretExampleFile {
				want = append(want, f)
			}
			continue
		}
		dir := filepath.Dir(f)
		kustomizations = append(kustomizations, dir)
		docs, err := readManifest(f)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := docs[0].obj.(*ktypes.Kustomization)
		if len(docs) != 1 || !ok {
			t.Fatalf("%s: want one Kustomization, got %d documents (first %s)", f, len(docs), docs[0].kind)
		}
		refs := slices.Clone(k.Resources)
		for _, p := range k.Patches {
			refs = append(refs, p.Path)
		}
		for _, r := range refs {
			if r == "" {
				t.Errorf("%s: an inline patch: keep patches in files, so they are checked", f)
				continue
			}
			p := filepath.Join(dir, r)
			if st, err := os.Stat(p); err != nil {
				t.Errorf("%s lists %s: %v", f, r, err)
			} else if !st.IsDir() && filepath.Base(p) == secretExampleFile {
				t.Errorf("%s lists %s: it documents Secrets, it must not apply them", f, r)
			}
			uses[p] = append(uses[p], dir)
		}
	}
	var got []string
	for p, by := range uses {
		if len(by) > 1 && !slices.Contains(kustomizations, p) {
			t.Errorf("%s is listed by %v: one kustomization owns each file", p, by)
		}
		if !slices.Contains(kustomizations, p) {
			got = append(got, p)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manifests (-files +listed by a kustomization):\n%s", diff)
	}

	overlays := filepath.Join(kubeDir, "overlays")
	var gotOverlays []string
	for _, dir := range kustomizations {
		if filepath.Dir(dir) == overlays {
			gotOverlays = append(gotOverlays, filepath.Base(dir))
		} else if len(uses[dir]) == 0 {
			t.Errorf("kustomization %s is used by no overlay", dir)
		}
	}
	slices.Sort(gotOverlays)
	if diff := cmp.Diff([]string{overlayDryRun, overlayProduction}, gotOverlays); diff != "" {
		t.Errorf("overlays (-checked +present): give a new one checks in checkOverlay\n%s", diff)
	}
}

// TestManifestsHangTogether renders each overlay as kubectl apply -k would
// and runs every check on the result.
func TestManifestsHangTogether(t *testing.T) {
	for _, o := range []string{overlayProduction, overlayDryRun} {
		t.Run(o, func(t *testing.T) {
			b, err := loadBundle(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range checkOverlay(b) {
				t.Error(v)
			}
		})
	}
}

// mutation breaks a rendered overlay one way and names the checks that
// must fire, and only them.
type mutation struct {
	name   string
	mutate func(b *bundle)
	want   []rule
}

// runMutations renders the overlay once, then applies each mutation to a
// fresh decoding of it and compares the rules broken.
func runMutations(t *testing.T, overlay string, tests []mutation) {
	t.Helper()
	rendered, err := renderOverlay(overlay)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := parseBundle(overlay, rendered)
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(b)
			found := checkOverlay(b)
			var got []rule
			for _, v := range found {
				if !slices.Contains(got, v.rule) {
					got = append(got, v.rule)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rules broken (-want +got):\n%s\nviolations: %v", diff, found)
			}
		})
	}
}

// envVar returns ctr's variable name, adding it when missing.
func envVar(ctr *corev1.Container, name string) *corev1.EnvVar {
	i := slices.IndexFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: name})
		i = len(ctr.Env) - 1
	}
	return &ctr.Env[i]
}

func hushContainer(b *bundle) *corev1.Container {
	return &b.deployments[0].Spec.Template.Spec.Containers[0]
}

func redisContainer(b *bundle) *corev1.Container {
	return &b.statefulSet(redisStatefulSet).Spec.Template.Spec.Containers[0]
}

// setRedisOption sets redis-server's --name to value, or drops it when
// value is "".
func setRedisOption(b *bundle, name, value string) {
	ctr := redisContainer(b)
	i := slices.Index(ctr.Args, "--"+name)
	switch {
	case i < 0:
		ctr.Args = append(ctr.Args, "--"+name, value)
	case value == "":
		ctr.Args = slices.Delete(ctr.Args, i, i+2)
	default:
		ctr.Args[i+1] = value
	}
}

// setSecret sets one key of a Secret, rendered (data) or example (stringData).
func setSecret(b *bundle, name, key, value string) {
	s := b.secret(name)
	if s.StringData != nil {
		s.StringData[key] = value
		return
	}
	s.Data[key] = []byte(value)
}

// TestChecksCatchMistakes breaks the rendered production overlay one way at
// a time and expects the check for that mistake, and only it, to fire.
func TestChecksCatchMistakes(t *testing.T) {
	ctr := hushContainer
	pod := func(b *bundle) *corev1.PodSpec { return &b.deployments[0].Spec.Template.Spec }
	env := func(b *bundle, name string) *corev1.EnvVar { return envVar(ctr(b), name) }
	config := func(b *bundle) map[string]string { return b.configMap("hush-config").Data }
	ptr := func(v int64) *int64 { return &v }
	redis := func(b *bundle) *corev1.PodSpec { return &b.statefulSet(redisStatefulSet).Spec.Template.Spec }
	hushService := func(b *bundle) *corev1.Service { return b.service("hush") }
	redisService := func(b *bundle) *corev1.Service { return b.service("redis") }

	runMutations(t, overlayProduction, []mutation{
		{"readiness on /healthz", func(b *bundle) { ctr(b).ReadinessProbe.HTTPGet.Path = "/healthz" }, []rule{ruleProbes}},
		{"liveness on /readyz", func(b *bundle) { ctr(b).LivenessProbe.HTTPGet.Path = "/readyz" }, []rule{ruleProbes}},
		{"no readiness probe", func(b *bundle) { ctr(b).ReadinessProbe = nil }, []rule{ruleProbes}},
		{"liveness on another port", func(b *bundle) { ctr(b).LivenessProbe.HTTPGet.Port = intstr.FromInt32(9090) }, []rule{ruleProbes}},
		{"hush listens elsewhere", func(b *bundle) { env(b, "HUSH_HTTP_ADDR").Value = ":9090" }, []rule{ruleProbes}},
		{"misspelt env key", func(b *bundle) { env(b, "HUSH_THROTTLE_LIMIT").Value = "5/1m" }, []rule{ruleEnvKeys}},
		{"unknown ConfigMap key", func(b *bundle) { config(b)["HUSH_REDIS_ADDR"] = "redis:6379" }, []rule{ruleEnvKeys}},
		{"envFrom prefix", func(b *bundle) { ctr(b).EnvFrom[0].Prefix = "X_" }, []rule{ruleEnvKeys}},
		{"missing ConfigMap", func(b *bundle) { ctr(b).EnvFrom[0].ConfigMapRef.Name = "hush-cfg" }, []rule{ruleRefs}},
		{"missing Secret key", func(b *bundle) { env(b, "HUSH_API_TOKEN").ValueFrom.SecretKeyRef.Key = "tokn" }, []rule{ruleRefs}},
		{"credential file not mounted", func(b *bundle) { env(b, "HUSH_FCM_CREDENTIALS_FILE").Value = "/etc/hush/fcm/sa.json" }, []rule{ruleCredFiles}},
		{"credential volume unmounted", func(b *bundle) { ctr(b).VolumeMounts = ctr(b).VolumeMounts[:1] }, []rule{ruleCredFiles}},
		{"no CPU request", func(b *bundle) { delete(ctr(b).Resources.Requests, corev1.ResourceCPU) }, []rule{ruleResources}},
		{"memory limit below request", func(b *bundle) { ctr(b).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi") }, []rule{ruleResources}},
		{"root user", func(b *bundle) { pod(b).SecurityContext.RunAsUser = ptr(0) }, []rule{ruleSecurity}},
		{"writable root filesystem", func(b *bundle) { *ctr(b).SecurityContext.ReadOnlyRootFilesystem = false }, []rule{ruleSecurity}},
		{"capabilities kept", func(b *bundle) { ctr(b).SecurityContext.Capabilities.Drop = nil }, []rule{ruleSecurity}},
		{"no seccomp profile", func(b *bundle) { pod(b).SecurityContext.SeccompProfile = nil }, []rule{ruleSecurity}},
		{"short grace period", func(b *bundle) { pod(b).TerminationGracePeriodSeconds = ptr(15) }, []rule{ruleGrace}},
		{"long shutdown timeout", func(b *bundle) { config(b)["HUSH_SHUTDOWN_TIMEOUT"] = "25s" }, []rule{ruleGrace}},
		{"replicas pinned", func(b *bundle) { r := int32(3); b.deployments[0].Spec.Replicas = &r }, []rule{ruleReplicas}},
		{"PDB selects other pods", func(b *bundle) {
			b.pdbs[0].Spec.Selector.MatchLabels["app.kubernetes.io/component"] = "api"
		}, []rule{ruleSelectors}},
		{"Service selects other pods", func(b *bundle) { hushService(b).Spec.Selector["app.kubernetes.io/name"] = "hushd" }, []rule{ruleSelectors}},
		{"Service on another port", func(b *bundle) { hushService(b).Spec.Ports[0].TargetPort = intstr.FromInt32(9090) }, []rule{ruleService}},
		{"PDB blocks drains", func(b *bundle) { m := intstr.FromInt32(2); b.pdbs[0].Spec.MinAvailable = &m }, []rule{rulePDB}},
		{"ScaledObject targets another Deployment", func(b *bundle) { b.scaledObjects[0].Spec.ScaleTargetRef.Name = "hush-worker" }, []rule{ruleScaleTarget}},
		{"scale to zero", func(b *bundle) { z := int32(0); b.scaledObjects[0].Spec.MinReplicaCount = &z }, []rule{rulePDB, ruleScaleTarget}},
		{"max below min", func(b *bundle) { m := int32(1); b.scaledObjects[0].Spec.MaxReplicaCount = &m }, []rule{ruleScaleTarget}},
		{"misspelt trigger metadata", func(b *bundle) {
			md := b.scaledObjects[0].Spec.Triggers[0].Metadata
			md["listname"] = md["listName"]
			delete(md, "listName")
		}, []rule{ruleTriggers}},
		{"wrong list key", func(b *bundle) { b.scaledObjects[0].Spec.Triggers[1].Metadata["listName"] = "asynq:high:pending" }, []rule{ruleTriggers}},
		{"queue without trigger", func(b *bundle) { tr := &b.scaledObjects[0].Spec.Triggers; *tr = (*tr)[:2] }, []rule{ruleTriggers}},
		{"queue added to HUSH_QUEUES only", func(b *bundle) { config(b)["HUSH_QUEUES"] = "critical:6,high:3,normal:1,bulk:1" }, []rule{ruleTriggers}},
		{"delivery shards without their triggers", func(b *bundle) { config(b)["HUSH_DELIVERY_SHARDS"] = "2" }, []rule{ruleTriggers}},
		{"duplicate trigger names", func(b *bundle) { b.scaledObjects[0].Spec.Triggers[2].Name = "high-pending" }, []rule{ruleTriggers}},
		{"listLength not a number", func(b *bundle) { b.scaledObjects[0].Spec.Triggers[0].Metadata["listLength"] = "lots" }, []rule{ruleTriggers}},
		{"unknown TriggerAuthentication", func(b *bundle) { b.scaledObjects[0].Spec.Triggers[0].AuthenticationRef.Name = "redis" }, []rule{ruleTriggerAuths}},
		{"no Redis address for KEDA", func(b *bundle) {
			ta := b.triggerAuths[0]
			ta.Spec.SecretTargetRef = slices.DeleteFunc(ta.Spec.SecretTargetRef, func(r kedav1alpha1.AuthSecretTargetRef) bool { return r.Parameter == "address" })
		}, []rule{ruleTriggerAuths}},
		{"TriggerAuthentication reads a missing key", func(b *bundle) { b.triggerAuths[0].Spec.SecretTargetRef[1].Key = "pass" }, []rule{ruleRefs}},

		// The layout.
		{"object in another namespace", func(b *bundle) { b.deployments[0].Namespace = "default" }, []rule{ruleNamespace}},
		{"no hush Service", func(b *bundle) { hushService(b).Name = "hush-api" }, []rule{ruleShape}},

		// The example Redis.
		{"no Redis", func(b *bundle) { b.statefulSets = nil }, []rule{ruleRedis}},
		{"Redis 6", func(b *bundle) { redisContainer(b).Image = "redis:6-alpine" }, []rule{ruleRedis}},
		{"appendonly no", func(b *bundle) { setRedisOption(b, "appendonly", "no") }, []rule{ruleRedis}},
		{"appendonly unset", func(b *bundle) { setRedisOption(b, "appendonly", "") }, []rule{ruleRedis}},
		{"Redis run through a shell", func(b *bundle) {
			c := redisContainer(b)
			c.Command, c.Args = []string{"sh", "-c"}, []string{strings.Join(c.Args, " ")}
		}, []rule{ruleRedis}},
		{"keys evicted", func(b *bundle) { setRedisOption(b, "maxmemory-policy", "allkeys-lru") }, []rule{ruleRedis}},
		{"maxmemory above the limit", func(b *bundle) { setRedisOption(b, "maxmemory", "2gb") }, []rule{ruleRedis}},
		{"no volumeClaimTemplates", func(b *bundle) {
			ss := b.statefulSet(redisStatefulSet)
			ss.Spec.VolumeClaimTemplates = nil
			redis(b).Volumes = append(redis(b).Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, []rule{ruleRedis}},
		{"claim without storage", func(b *bundle) {
			delete(b.statefulSet(redisStatefulSet).Spec.VolumeClaimTemplates[0].Spec.Resources.Requests, corev1.ResourceStorage)
		}, []rule{ruleRedis}},
		{"data directory off the claim", func(b *bundle) { setRedisOption(b, "dir", "/tmp") }, []rule{ruleRedis}},
		{"no readiness probe", func(b *bundle) { redisContainer(b).ReadinessProbe = nil }, []rule{ruleRedis}},
		{"TCP readiness probe", func(b *bundle) {
			redisContainer(b).ReadinessProbe.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("redis")}}
		}, []rule{ruleRedis}},
		{"probe without the password", func(b *bundle) {
			c := redisContainer(b)
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "REDISCLI_AUTH" })
		}, []rule{ruleRedis}},
		{"Redis without a memory request", func(b *bundle) { delete(redisContainer(b).Resources.Requests, corev1.ResourceMemory) }, []rule{ruleResources}},
		{"Redis as root", func(b *bundle) { redis(b).SecurityContext.RunAsUser = ptr(0) }, []rule{ruleSecurity}},
		{"Redis selector misses its pods", func(b *bundle) {
			b.statefulSet(redisStatefulSet).Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "valkey"
		}, []rule{ruleSelectors}},
		{"hush selects the Redis pods", func(b *bundle) {
			d := b.deployments[0]
			d.Spec.Selector.MatchLabels = map[string]string{"app.kubernetes.io/part-of": "hush"}
			d.Spec.Template.Labels["app.kubernetes.io/part-of"] = "hush"
		}, []rule{ruleSelectors}},
		{"Service not headless", func(b *bundle) { redisService(b).Spec.ClusterIP = "" }, []rule{ruleRedis}},
		{"serviceName names no Service", func(b *bundle) { b.statefulSet(redisStatefulSet).Spec.ServiceName = "redis-headless" }, []rule{ruleRedis}},
		{"Service misses the Redis pods", func(b *bundle) { redisService(b).Spec.Selector["app.kubernetes.io/name"] = "valkey" }, []rule{ruleRedis}},
		{"Service on another port", func(b *bundle) { redisService(b).Spec.Ports[0].TargetPort = intstr.FromInt32(6380) }, []rule{ruleRedis}},
		{"URL names another host", func(b *bundle) {
			setSecret(b, "hush-redis", "url", "redis://:CHANGE-ME@redis-master.hush.svc:6379/0")
		}, []rule{ruleRedis}},
		{"URL names another namespace", func(b *bundle) {
			setSecret(b, "hush-redis", "url", "redis://:CHANGE-ME@redis.default.svc:6379/0")
		}, []rule{ruleRedis}},
		{"URL on another port", func(b *bundle) { setSecret(b, "hush-redis", "url", "redis://:CHANGE-ME@redis.hush.svc:6380/0") }, []rule{ruleRedis}},
		{"URL with another password", func(b *bundle) { setSecret(b, "hush-redis", "url", "redis://:secret@redis.hush.svc:6379/0") }, []rule{ruleRedis}},
		{"URL not a URL", func(b *bundle) { setSecret(b, "hush-redis", "url", "redis.hush.svc:6379") }, []rule{ruleRedis}},
		{"URL's short host", func(b *bundle) { setSecret(b, "hush-redis", "url", "redis://:CHANGE-ME@redis:6379/0") }, nil},
		{"KEDA reads a bare Service name", func(b *bundle) { setSecret(b, "hush-redis", "address", "redis:6379") }, []rule{ruleRedis}},
		{"KEDA reads another port", func(b *bundle) { setSecret(b, "hush-redis", "address", "redis.hush.svc:6380") }, []rule{ruleRedis}},
		{"KEDA reads another address", func(b *bundle) { setSecret(b, "hush-redis", "address", "redis-master.hush.svc:6379") }, []rule{ruleRedis}},
		{"KEDA reads another password", func(b *bundle) {
			b.triggerAuths[0].Spec.SecretTargetRef[1].Key = "url"
		}, []rule{ruleRedis}},

		// What production needs.
		{"dry-run in production", func(b *bundle) { env(b, "HUSH_DRY_RUN").Value = "true" }, []rule{ruleProduction}},
		{"no provider", func(b *bundle) {
			ctr(b).Env = slices.DeleteFunc(ctr(b).Env, func(e corev1.EnvVar) bool {
				return slices.Contains(providerCredentialKeys, e.Name) || e.Name == "HUSH_APNS_TOPIC"
			})
		}, []rule{ruleProduction}},
		{"a Secret rendered", func(b *bundle) { b.secrets = append(b.secrets, b.secret("hush-api")) }, []rule{ruleProduction}},
		{"no ScaledObject", func(b *bundle) { b.scaledObjects = nil }, []rule{rulePDB, ruleProduction}},
		{"no PDB", func(b *bundle) { b.pdbs = nil }, []rule{ruleProduction}},
	})
}

// TestDryRunChecksCatchMistakes breaks the rendered dry-run overlay one way
// at a time.
func TestDryRunChecksCatchMistakes(t *testing.T) {
	production, err := loadBundle(overlayProduction)
	if err != nil {
		t.Fatal(err)
	}
	ctr := hushContainer
	withoutEnv := func(b *bundle, name string) {
		ctr(b).Env = slices.DeleteFunc(ctr(b).Env, func(e corev1.EnvVar) bool { return e.Name == name })
	}
	runMutations(t, overlayDryRun, []mutation{
		{"unchanged", func(*bundle) {}, nil},
		{"HUSH_DRY_RUN unset", func(b *bundle) { withoutEnv(b, "HUSH_DRY_RUN") }, []rule{ruleDryRun}},
		{"HUSH_DRY_RUN false", func(b *bundle) { envVar(ctr(b), "HUSH_DRY_RUN").Value = "false" }, []rule{ruleDryRun}},
		{"HUSH_DRY_RUN from the ConfigMap", func(b *bundle) {
			withoutEnv(b, "HUSH_DRY_RUN")
			b.configMap("hush-config").Data["HUSH_DRY_RUN"] = "true"
		}, nil},
		{"a provider credential", func(b *bundle) { envVar(ctr(b), "HUSH_APNS_KEY_ID").Value = "ABC123DEFG" }, []rule{ruleDryRun}},
		{"a Secret to create by hand", func(b *bundle) {
			s := b.secret("hush-api")
			b.secrets = slices.DeleteFunc(b.secrets, func(x *corev1.Secret) bool { return x == s })
			b.exampleSecrets = append(b.exampleSecrets, s)
		}, []rule{ruleDryRun}},
		{"a Secret not rendered", func(b *bundle) {
			b.secrets = slices.DeleteFunc(b.secrets, func(x *corev1.Secret) bool { return x.Name == "hush-api" })
		}, []rule{ruleDryRun, ruleRefs}},
		{"needs KEDA", func(b *bundle) { b.triggerAuths = production.triggerAuths }, []rule{ruleDryRun}},
		{"a PDB on one replica", func(b *bundle) { b.pdbs = production.pdbs }, []rule{rulePDB}},
		{"URL with another password", func(b *bundle) { setSecret(b, "hush-redis", "url", "redis://:x@redis.hush.svc:6379/0") }, []rule{ruleRedis}},
	})
}
