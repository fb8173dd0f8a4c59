package deploy

import (
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
)

// TestManifestsDecodeStrictly decodes every document of every file under
// kubernetes/ into its real API type; unknown, misspelt or duplicate fields
// fail.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", kubeDir)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			docs, err := readManifest(name)
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

// TestKustomizationListsEveryManifest: kubectl apply -k applies every
// manifest here except the example Secrets, and nothing else.
func TestKustomizationListsEveryManifest(t *testing.T) {
	b, err := loadBundle()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(kubeDir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".yaml") && n != kustomizationFile && n != secretExampleFile {
			want = append(want, n)
		}
	}
	got := slices.Sorted(slices.Values(b.kustomization.Resources))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kustomization resources (-files +listed):\n%s", diff)
	}
	if len(b.namespaces) != 1 || b.namespaces[0].Name != b.kustomization.Namespace {
		t.Errorf("kustomization namespace %q, want the one Namespace manifest's name", b.kustomization.Namespace)
	}
}

// TestManifestsHangTogether runs every semantic check on the real manifests.
func TestManifestsHangTogether(t *testing.T) {
	b, err := loadBundle()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range checkBundle(b) {
		t.Error(v)
	}
}

// TestChecksCatchMistakes breaks the real manifests one way at a time and
// expects the check for that mistake, and only it, to fire.
func TestChecksCatchMistakes(t *testing.T) {
	ctr := func(b *bundle) *corev1.Container { return &b.deployments[0].Spec.Template.Spec.Containers[0] }
	pod := func(b *bundle) *corev1.PodSpec { return &b.deployments[0].Spec.Template.Spec }
	env := func(b *bundle, name string) *corev1.EnvVar {
		c := ctr(b)
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 {
			c.Env = append(c.Env, corev1.EnvVar{Name: name})
			i = len(c.Env) - 1
		}
		return &c.Env[i]
	}
	config := func(b *bundle) map[string]string { return b.configMap("hush-config").Data }
	ptr := func(v int64) *int64 { return &v }

	tests := []struct {
		name   string
		mutate func(b *bundle)
		want   []rule
	}{
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
		{"Service selects other pods", func(b *bundle) { b.services[0].Spec.Selector["app.kubernetes.io/name"] = "hushd" }, []rule{ruleSelectors}},
		{"Service on another port", func(b *bundle) { b.services[0].Spec.Ports[0].TargetPort = intstr.FromInt32(9090) }, []rule{ruleService}},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := loadBundle()
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(b)
			found := checkBundle(b)
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
