module github.com/signal-service/infra/k8s/validate

go 1.24.0

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	k8s.io/api v0.34.1 // indirect
	k8s.io/apimachinery v0.34.1 // indirect
	sigs.k8s.io/kustomize/api v0.20.1 // indirect
	sigs.k8s.io/kustomize/kyaml v0.20.1 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
