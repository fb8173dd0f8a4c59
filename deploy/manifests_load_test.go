package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kubeDir holds the Kubernetes manifests, relative to this package: base/
// (hush), redis/ (the example Redis) and one kustomize overlay per way to
// install them under overlays/.
const kubeDir = "kubernetes"

// The overlays, named after their directories under kubeDir/overlays.
const (
	overlayProduction = "production" // APNs and FCM from Secrets, KEDA, a PDB
	overlayDryRun     = "dry-run"    // nothing to create first: HUSH_DRY_RUN, generated Secrets
)

// secretExampleFile documents the Secrets an overlay expects to find: it is
// never applied (no kustomization lists it). Relative to the overlay.
const secretExampleFile = "secret.example.yaml"

func overlayDir(name string) string { return filepath.Join(kubeDir, "overlays", name) }

// document is one YAML document of a manifest file, decoded strictly into
// the API type its apiVersion and kind name.
type document struct {
	where string // file#index, for messages
	kind  string // apiVersion/kind
	obj   any    // e.g. *appsv1.Deployment
}

// newObject returns an empty value of the real API type for each
// apiVersion/kind the manifests may use. A kind missing here is an error, so
// no manifest escapes the checks.
func newObject(apiVersionKind string) (any, bool) {
	switch apiVersionKind {
	case "v1/Namespace":
		return &corev1.Namespace{}, true
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, true
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	case "keda.sh/v1alpha1/ScaledObject":
		return &kedav1alpha1.ScaledObject{}, true
	case "keda.sh/v1alpha1/TriggerAuthentication":
		return &kedav1alpha1.TriggerAuthentication{}, true
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &prometheusRule{}, true
	case "kustomize.config.k8s.io/v1beta1/Kustomization":
		return &ktypes.Kustomization{}, true
	}
	return nil, false
}

// splitDocuments returns the non-empty YAML documents of src (a document
// holding only comments is empty).
func splitDocuments(src []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(src)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			docs = append(docs, doc)
		}
	}
}

// decodeStrict decodes one YAML document into obj the way the API server's
// strict field validation does: field names are case-sensitive, and unknown
// or duplicate fields are errors.
func decodeStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// decodeDocument reads the apiVersion and kind of doc and decodes it
// strictly into the matching API type.
func decodeDocument(doc []byte) (kind string, obj any, err error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, err
	}
	kind = tm.APIVersion + "/" + tm.Kind
	obj, ok := newObject(kind)
	if !ok {
		return kind, nil, fmt.Errorf("no API type known for %s: add it to newObject", kind)
	}
	if err := decodeStrict(doc, obj); err != nil {
		return kind, nil, fmt.Errorf("%s: %w", kind, err)
	}
	return kind, obj, nil
}

// decodeDocuments strictly decodes every YAML document of src; where names
// src in messages.
func decodeDocuments(where string, src []byte) ([]document, error) {
	docs, err := splitDocuments(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no YAML document", where)
	}
	out := make([]document, 0, len(docs))
	for i, doc := range docs {
		at := fmt.Sprintf("%s#%d", where, i)
		kind, obj, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		out = append(out, document{where: at, kind: kind, obj: obj})
	}
	return out, nil
}

// readManifest decodes every document of one file (a path relative to this
// package).
func readManifest(file string) ([]document, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return decodeDocuments(file, src)
}

// renderOverlay runs kustomize (the library kubectl apply -k uses) on one
// overlay and returns the YAML it would apply.
func renderOverlay(name string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), overlayDir(name))
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", overlayDir(name), err)
	}
	return m.AsYaml()
}

// bundle is what kubectl apply -k creates for one overlay, plus the example
// Secrets it expects to find, typed.
type bundle struct {
	overlay        string
	namespaces     []*corev1.Namespace
	deployments    []*appsv1.Deployment
	statefulSets   []*appsv1.StatefulSet
	services       []*corev1.Service
	pdbs           []*policyv1.PodDisruptionBudget
	configMaps     []*corev1.ConfigMap
	secrets        []*corev1.Secret // rendered: applied with the rest
	exampleSecrets []*corev1.Secret // from the overlay's secretExampleFile: not applied
	scaledObjects  []*kedav1alpha1.ScaledObject
	triggerAuths   []*kedav1alpha1.TriggerAuthentication
	rules          []*prometheusRule
	objects        []metav1.Object // every rendered object but the Namespaces
}

// loadBundle renders an overlay and decodes the result.
func loadBundle(overlay string) (*bundle, error) {
	rendered, err := renderOverlay(overlay)
	if err != nil {
		return nil, err
	}
	return parseBundle(overlay, rendered)
}

// parseBundle decodes an overlay's rendered YAML strictly, and the overlay's
// example Secrets when it has some.
func parseBundle(overlay string, rendered []byte) (*bundle, error) {
	docs, err := decodeDocuments("kustomize build "+overlayDir(overlay), rendered)
	if err != nil {
		return nil, err
	}
	b := &bundle{overlay: overlay}
	for _, d := range docs {
		if err := b.add(d); err != nil {
			return nil, err
		}
	}
	example := filepath.Join(overlayDir(overlay), secretExampleFile)
	if _, err := os.Stat(example); errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	docs, err = readManifest(example)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		s, ok := d.obj.(*corev1.Secret)
		if !ok {
			return nil, fmt.Errorf("%s: %s: only Secrets belong in %s", d.where, d.kind, secretExampleFile)
		}
		b.exampleSecrets = append(b.exampleSecrets, s)
	}
	return b, nil
}

func (b *bundle) add(d document) error {
	if o, ok := d.obj.(metav1.Object); ok {
		if _, isNamespace := o.(*corev1.Namespace); !isNamespace {
			b.objects = append(b.objects, o)
		}
	}
	switch o := d.obj.(type) {
	case *corev1.Namespace:
		b.namespaces = append(b.namespaces, o)
	case *appsv1.Deployment:
		b.deployments = append(b.deployments, o)
	case *appsv1.StatefulSet:
		b.statefulSets = append(b.statefulSets, o)
	case *corev1.Service:
		b.services = append(b.services, o)
	case *policyv1.PodDisruptionBudget:
		b.pdbs = append(b.pdbs, o)
	case *corev1.ConfigMap:
		b.configMaps = append(b.configMaps, o)
	case *corev1.Secret:
		b.secrets = append(b.secrets, o)
	case *kedav1alpha1.ScaledObject:
		b.scaledObjects = append(b.scaledObjects, o)
	case *kedav1alpha1.TriggerAuthentication:
		b.triggerAuths = append(b.triggerAuths, o)
	case *prometheusRule:
		b.rules = append(b.rules, o)
	default:
		return fmt.Errorf("%s: %s is not expected among the resources", d.where, d.kind)
	}
	return nil
}
