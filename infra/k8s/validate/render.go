// Package validate checks the Kubernetes manifests in infra/k8s without a cluster: every overlay is
// built with kustomize (in-process, sigs.k8s.io/kustomize/api), every object is decoded strictly into
// its Kubernetes API type (unknown or duplicate fields refused), operator resources are checked
// against the fields of their CRDs that this repository uses, and policy tests run on the result.
package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Object is one rendered manifest: its raw YAML, its kind and name, and the decoded value (a
// k8s.io/api type for built-in kinds, one of the CRD types in crds.go otherwise).
type Object struct {
	GVK       schema.GroupVersionKind
	Name      string
	Namespace string
	YAML      []byte
	Value     any
}

// K8sRoot is infra/k8s, found from this source file so tests run from any working directory.
func K8sRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

var builtins = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strict refuses unknown and duplicate fields, as `kubectl apply --validate=strict` does.
var strict = serializer.NewCodecFactory(builtins, serializer.EnableStrict).UniversalDeserializer()

// Build runs kustomize on a directory under infra/k8s (e.g. "overlays/prod") and decodes every object.
func Build(dir string) ([]Object, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(K8sRoot(), dir))
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []Object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		o, err := Decode(y)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", dir, r.GetKind(), r.GetName(), err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Decode decodes one manifest strictly: built-in kinds into k8s.io/api types, known CRDs into the
// types of crds.go; any other kind is an error (nothing goes unchecked).
func Decode(y []byte) (Object, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(y, &head); err != nil {
		return Object{}, err
	}
	if head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
		return Object{}, fmt.Errorf("apiVersion, kind and metadata.name are required")
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return Object{}, err
	}
	o := Object{GVK: gv.WithKind(head.Kind), Name: head.Metadata.Name, Namespace: head.Metadata.Namespace, YAML: y}
	if builtins.Recognizes(o.GVK) {
		v, _, err := strict.Decode(y, nil, nil)
		if err != nil {
			return o, err
		}
		o.Value = v
		return o, nil
	}
	newCRD, ok := crdTypes[o.GVK]
	if !ok {
		return o, fmt.Errorf("unknown apiVersion/kind %s: add it to the scheme or to crds.go", o.GVK)
	}
	v := newCRD()
	// YAML to JSON without the target type (as the API server reads it: yaml.UnmarshalStrict would
	// turn `quorum: 2` into the string a CRD field wants), then JSON strictly into the type.
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return o, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return o, err
	}
	if err := v.Check(); err != nil {
		return o, err
	}
	o.Value = v
	return o, nil
}
