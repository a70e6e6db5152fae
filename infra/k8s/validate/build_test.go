package validate

import (
	"strings"
	"testing"
)

// Every directory kustomize can build: the base alone and each overlay.
var targets = []string{"base", "overlays/dev", "overlays/prod", "overlays/prod-cluster"}

func build(t *testing.T, dir string) []Object {
	t.Helper()
	objs, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestWhenEachOverlayIsBuiltThenEveryObjectDecodesStrictly(t *testing.T) {
	for _, dir := range targets {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			if len(objs) < 20 {
				t.Fatalf("only %d objects", len(objs))
			}
		})
	}
}

func TestWhenAManifestHasAnUnknownFieldThenDecodingRefusesIt(t *testing.T) {
	cases := map[string]string{
		"built-in kind": `apiVersion: apps/v1
kind: Deployment
metadata: { name: x }
spec:
  replicas: 1
  selector: { matchLabels: { a: b } }
  template:
    metadata: { labels: { a: b } }
    spec:
      containers: [{ name: x, image: img, readinesProbe: {} }]
`,
		"duplicate field": `apiVersion: v1
kind: ConfigMap
metadata: { name: x }
data: { A: "1" }
data: { B: "2" }
`,
		"operator kind": `apiVersion: rabbitmq.com/v1beta1
kind: RabbitmqCluster
metadata: { name: x }
spec: { replicas: 3, persistance: { storage: 1Gi } }
`,
		"operator kind, Redis Sentinel": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: { name: x }
spec:
  clusterSize: 3
  kubernetesConfig: { image: img }
  redisSentinelConfig: { redisReplicationName: x, masterName: m }
`,
		"operator kind, Redis Sentinel tuning as a number": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: { name: x }
spec:
  clusterSize: 3
  kubernetesConfig: { image: img }
  redisSentinelConfig: { redisReplicationName: x, quorum: 2 }
`,
		"operator kind, Redis Cluster field on a replication": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: { name: x }
spec:
  clusterSize: 3
  kubernetesConfig: { image: img }
  redisLeader: { replicas: 1 }
`,
		"unknown kind": `apiVersion: example.com/v1
kind: Widget
metadata: { name: x }
`,
		"missing required CRD field": `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: { name: x }
spec: { scaleTargetRef: { name: w }, triggers: [] }
`,
		"operator kind, Redis Sentinel field on a cluster": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: { name: x }
spec: { clusterSize: 3, kubernetesConfig: { image: img }, redisSentinelConfig: { redisReplicationName: x } }
`,
		"RedisCluster of one master (no majority to fail over)": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: { name: x }
spec: { clusterSize: 1, kubernetesConfig: { image: img } }
`,
		"RedisReplication without clusterSize": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: { name: x }
spec: { kubernetesConfig: { image: img } }
`,
		"RedisReplication without an image": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: { name: x }
spec: { clusterSize: 3, kubernetesConfig: {} }
`,
		"RedisSentinel without the replication it monitors": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: { name: x }
spec:
  clusterSize: 3
  kubernetesConfig: { image: img }
  redisSentinelConfig: { masterGroupName: m }
`,
		"RedisSentinel without redisSentinelConfig": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: { name: x }
spec: { clusterSize: 3, kubernetesConfig: { image: img } }
`,
	}
	for name, y := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode([]byte(y)); err == nil {
				t.Fatal("accepted")
			} else if testing.Verbose() {
				t.Log(strings.SplitN(err.Error(), "\n", 2)[0])
			}
		})
	}
}

func TestWhenARedisReplicationSentinelOrClusterHasItsRequiredFieldsThenItDecodes(t *testing.T) {
	for name, y := range map[string]string{
		"RedisReplication": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: { name: x }
spec: { clusterSize: 3, kubernetesConfig: { image: img } }
`,
		"RedisSentinel": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: { name: x }
spec:
  clusterSize: 3
  kubernetesConfig: { image: img }
  redisSentinelConfig: { redisReplicationName: x }
`,
		"RedisCluster": `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: { name: x }
spec: { clusterSize: 3, kubernetesConfig: { image: img } }
`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode([]byte(y)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
