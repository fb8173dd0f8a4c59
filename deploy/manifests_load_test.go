package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// kubeDir holds the Kubernetes manifests, relative to this package.
const kubeDir = "kubernetes"

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
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	case "keda.sh/v1alpha1/ScaledObject":
		return &kedav1alpha1.ScaledObject{}, true
	case "keda.sh/v1alpha1/TriggerAuthentication":
		return &kedav1alpha1.TriggerAuthentication{}, true
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

// readManifest decodes every document of one file under kubeDir.
func readManifest(name string) ([]document, error) {
	src, err := os.ReadFile(filepath.Join(kubeDir, name))
	if err != nil {
		return nil, err
	}
	docs, err := splitDocuments(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no YAML document", name)
	}
	out := make([]document, 0, len(docs))
	for i, doc := range docs {
		where := fmt.Sprintf("%s#%d", name, i)
		kind, obj, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, document{where: where, kind: kind, obj: obj})
	}
	return out, nil
}

// bundle is what kubectl apply -k deploy/kubernetes creates, plus the example
// Secrets it expects to find, typed.
type bundle struct {
	kustomization *ktypes.Kustomization
	namespaces    []*corev1.Namespace
	deployments   []*appsv1.Deployment
	services      []*corev1.Service
	pdbs          []*policyv1.PodDisruptionBudget
	configMaps    []*corev1.ConfigMap
	secrets       []*corev1.Secret // from secretExampleFile: not applied
	scaledObjects []*kedav1alpha1.ScaledObject
	triggerAuths  []*kedav1alpha1.TriggerAuthentication
}

const (
	kustomizationFile = "kustomization.yaml"
	secretExampleFile = "secret.example.yaml"
)

// loadBundle decodes kustomization.yaml, every resource it lists and the
// example Secrets.
func loadBundle() (*bundle, error) {
	docs, err := readManifest(kustomizationFile)
	if err != nil {
		return nil, err
	}
	k, ok := docs[0].obj.(*ktypes.Kustomization)
	if len(docs) != 1 || !ok {
		return nil, fmt.Errorf("%s: want one Kustomization, got %d documents (first %s)", kustomizationFile, len(docs), docs[0].kind)
	}
	b := &bundle{kustomization: k}
	for _, name := range append(slices.Clone(k.Resources), secretExampleFile) {
		docs, err := readManifest(name)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if err := b.add(d, name == secretExampleFile); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func (b *bundle) add(d document, example bool) error {
	if _, isSecret := d.obj.(*corev1.Secret); isSecret != example {
		return fmt.Errorf("%s: %s: Secrets belong in %s only, and only Secrets", d.where, d.kind, secretExampleFile)
	}
	switch o := d.obj.(type) {
	case *corev1.Namespace:
		b.namespaces = append(b.namespaces, o)
	case *appsv1.Deployment:
		b.deployments = append(b.deployments, o)
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
	default:
		return fmt.Errorf("%s: %s is not expected among the resources", d.where, d.kind)
	}
	return nil
}
