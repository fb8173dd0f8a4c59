package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// readmeFile tells how to build the image and load it into a local cluster.
const readmeFile = "README.md"

const ruleImage rule = "the dry-run overlay runs, without pulling it, the image deploy/README.md and the Dockerfile build and load"

// The commands deploy/README.md gives; each must be given for the image the
// dry-run overlay runs (production's, pushed to a registry, may differ).
var imageCommands = []struct {
	what string
	re   *regexp.Regexp
}{
	{"docker build -t IMAGE .", regexp.MustCompile(`docker build (?:[^\n]*\s)?-t (\S+) \.`)},
	{"kind load docker-image IMAGE", regexp.MustCompile(`kind load docker-image (\S+)`)},
	{"minikube image load IMAGE", regexp.MustCompile(`minikube image load (\S+)`)},
}

// checkImage checks the dry-run overlay's hush image against the build and
// load commands of readme and the build command in dockerfile's comments.
func checkImage(b *bundle, readme, dockerfile string) []violation {
	c := &checker{}
	if len(b.deployments) != 1 || len(b.deployments[0].Spec.Template.Spec.Containers) != 1 {
		c.errorf(ruleShape, "want one Deployment with one container")
		return c.found
	}
	ctr := hushContainer(b)
	for _, cmd := range imageCommands {
		found := cmd.re.FindAllStringSubmatch(readme, -1)
		if !slices.ContainsFunc(found, func(m []string) bool { return m[1] == ctr.Image }) {
			c.errorf(ruleImage, "%s has no %q for %s, the image the Deployment runs (found %q)", readmeFile, cmd.what, ctr.Image, found)
		}
	}
	if m := imageCommands[0].re.FindStringSubmatch(dockerfile); m == nil || m[1] != ctr.Image {
		c.errorf(ruleImage, "%s's comments do not build %s with %q", dockerfilePath, ctr.Image, imageCommands[0].what)
	}
	if p := effectivePullPolicy(ctr); p == corev1.PullAlways {
		c.errorf(ruleImage, "%s is pulled (%s): an image loaded into the cluster would not be used", ctr.Image, p)
	}
	return c.found
}

// effectivePullPolicy is the container's imagePullPolicy after the API
// server's defaulting: Always for :latest or no tag, else IfNotPresent.
func effectivePullPolicy(ctr *corev1.Container) corev1.PullPolicy {
	if ctr.ImagePullPolicy != "" {
		return ctr.ImagePullPolicy
	}
	name := ctr.Image[strings.LastIndex(ctr.Image, "/")+1:]
	if strings.Contains(name, "@") {
		return corev1.PullIfNotPresent
	}
	if _, tag, ok := strings.Cut(name, ":"); !ok || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// TestImageMatchesBuildInstructions: the newcomer's path (build, load,
// apply the dry-run overlay) runs the image it built.
func TestImageMatchesBuildInstructions(t *testing.T) {
	b, err := loadBundle(overlayDryRun)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range checkImage(b, readFile(t, readmeFile), readFile(t, dockerfilePath)) {
		t.Error(v)
	}
}

func TestImageChecksCatchMistakes(t *testing.T) {
	readme, dockerfile := readFile(t, readmeFile), readFile(t, dockerfilePath)
	const build = "docker build -t hush:dev ."
	if !strings.Contains(readme, build) || !strings.Contains(dockerfile, "-t hush:dev .") {
		t.Fatalf("%s or %s no longer builds hush:dev: update this test", readmeFile, dockerfilePath)
	}
	tests := []struct {
		name               string
		readme, dockerfile string
		mutate             func(b *bundle)
		want               []rule
	}{
		{"unchanged", readme, dockerfile, nil, nil},
		{"README builds another tag", strings.ReplaceAll(readme, build, "docker build -t hush ."), dockerfile, nil, []rule{ruleImage}},
		{"README does not build", strings.ReplaceAll(readme, "docker build", "docker buildx bake"), dockerfile, nil, []rule{ruleImage}},
		{"README loads another image into kind", strings.Replace(readme, "kind load docker-image hush:dev", "kind load docker-image hush:latest", 1), dockerfile, nil, []rule{ruleImage}},
		{"README does not load into minikube", strings.ReplaceAll(readme, "minikube image load", "minikube cache add"), dockerfile, nil, []rule{ruleImage}},
		{"Dockerfile builds another tag", readme, strings.Replace(dockerfile, "-t hush:dev .", "-t hush .", 1), nil, []rule{ruleImage}},
		{"Deployment runs a registry image", readme, dockerfile, func(b *bundle) { hushContainer(b).Image = "ghcr.io/hushpush/hush:v0.1.0" }, []rule{ruleImage}},
		{"pulled always", readme, dockerfile, func(b *bundle) { hushContainer(b).ImagePullPolicy = corev1.PullAlways }, []rule{ruleImage}},
		{"latest without a pull policy", strings.ReplaceAll(readme, "hush:dev", "hush:latest"), strings.ReplaceAll(dockerfile, "hush:dev", "hush:latest"), func(b *bundle) {
			hushContainer(b).Image, hushContainer(b).ImagePullPolicy = "hush:latest", ""
		}, []rule{ruleImage}},
		{"a tag without a pull policy", readme, dockerfile, func(b *bundle) { hushContainer(b).ImagePullPolicy = "" }, nil},
		{"never pulled", readme, dockerfile, func(b *bundle) { hushContainer(b).ImagePullPolicy = corev1.PullNever }, nil},
	}
	rendered, err := renderOverlay(overlayDryRun)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := parseBundle(overlayDryRun, rendered)
			if err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(b)
			}
			var got []rule
			for _, v := range checkImage(b, tt.readme, tt.dockerfile) {
				if !slices.Contains(got, v.rule) {
					got = append(got, v.rule)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules broken (-want +got):\n%s", diff)
			}
		})
	}
}
