package deploy

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// providerCredentialKeys are the variables that hand hush an APNs or FCM
// credential: with any of them hush would call a provider.
var providerCredentialKeys = []string{
	"HUSH_APNS_KEY_FILE", "HUSH_APNS_KEY_ID", "HUSH_APNS_TEAM_ID", "HUSH_APNS_CERT_FILE",
	"HUSH_APNS_CERT_PASSWORD", "HUSH_FCM_CREDENTIALS_FILE",
}

// checkProduction: the overlay that sends real pushes.
func (c *checker) checkProduction(b *bundle, env map[string]string) {
	if len(b.scaledObjects) != 1 || len(b.triggerAuths) == 0 || len(b.pdbs) != 1 {
		c.errorf(ruleProduction, "%d ScaledObjects, %d TriggerAuthentications, %d PDBs; want KEDA scaling and a PDB",
			len(b.scaledObjects), len(b.triggerAuths), len(b.pdbs))
	}
	for _, s := range b.secrets {
		c.errorf(ruleProduction, "renders Secret %s: real credentials are created by hand (%s), never kept here", s.Name, secretExampleFile)
	}
	if dry, _ := strconv.ParseBool(env["HUSH_DRY_RUN"]); dry {
		c.errorf(ruleProduction, "HUSH_DRY_RUN is %q: nothing would be sent", env["HUSH_DRY_RUN"])
	}
	if !slices.ContainsFunc(providerCredentialKeys, func(k string) bool { return env[k] != "" }) {
		c.errorf(ruleProduction, "no provider credential (%v): hush would fall back to dry-run", providerCredentialKeys)
	}
}

// checkDryRun: the overlay a newcomer applies to a bare cluster, with no
// provider account and nothing to create first.
func (c *checker) checkDryRun(b *bundle, env map[string]string) {
	if dry, err := strconv.ParseBool(env["HUSH_DRY_RUN"]); err != nil || !dry {
		c.errorf(ruleDryRun, "HUSH_DRY_RUN is %q, want true", env["HUSH_DRY_RUN"])
	}
	for _, k := range providerCredentialKeys {
		if _, ok := env[k]; ok {
			c.errorf(ruleDryRun, "%s is set: dry-run needs no provider credential", k)
		}
	}
	if len(b.scaledObjects) > 0 || len(b.triggerAuths) > 0 {
		c.errorf(ruleDryRun, "KEDA objects need KEDA's CRDs, which a bare cluster lacks")
	}
	for _, s := range b.exampleSecrets {
		c.errorf(ruleDryRun, "expects Secret %s to be created by hand", s.Name)
	}
	for _, name := range b.secretsRead() {
		if !slices.ContainsFunc(b.secrets, func(s *corev1.Secret) bool { return s.Name == name }) {
			c.errorf(ruleDryRun, "reads Secret %s, which the overlay does not render", name)
		}
	}
}

// secretsRead lists the Secrets the pods read (env and volumes; optional
// references excepted), sorted.
func (b *bundle) secretsRead() []string {
	var pods []*corev1.PodSpec
	for _, d := range b.deployments {
		pods = append(pods, &d.Spec.Template.Spec)
	}
	for _, s := range b.statefulSets {
		pods = append(pods, &s.Spec.Template.Spec)
	}
	var names []string
	for _, pod := range pods {
		for _, ctr := range slices.Concat(pod.InitContainers, pod.Containers) {
			for _, e := range ctr.Env {
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && !isTrue(r.SecretKeyRef.Optional) {
					names = append(names, r.SecretKeyRef.Name)
				}
			}
			for _, from := range ctr.EnvFrom {
				if r := from.SecretRef; r != nil && !isTrue(r.Optional) {
					names = append(names, r.Name)
				}
			}
		}
		for _, v := range pod.Volumes {
			if s := v.Secret; s != nil && !isTrue(s.Optional) {
				names = append(names, s.SecretName)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
