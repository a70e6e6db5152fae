package validate

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// datastoreURL is a URL of the signal-service-datastores template with its placeholders (the
// passwords) replaced by "pw".
func datastoreURL(t *testing.T, objs []Object, key string) string {
	t.Helper()
	for _, e := range all[*ExternalSecret](objs) {
		if name, _ := e.Keys(); name == "signal-service-datastores" && e.Spec.Target.Template != nil {
			return regexp.MustCompile(`\{\{[^}]*\}\}`).ReplaceAllString(e.Spec.Target.Template.Data[key], "pw")
		}
	}
	t.Fatalf("no signal-service-datastores template with %s", key)
	return ""
}

func TestWhenProdClusterIsBuiltThenRedisIsAClusterAndEveryRabbitMQNodeIsListed(t *testing.T) {
	objs := build(t, "overlays/prod-cluster")
	if n := len(all[*RedisReplication](objs)) + len(all[*RedisSentinel](objs)); n != 0 {
		t.Errorf("the Sentinel setup is still there (%d objects): the cluster replaces it", n)
	}
	clusters := all[*RedisCluster](objs)
	if len(clusters) != 1 {
		t.Fatalf("want one RedisCluster, got %d", len(clusters))
	}
	rc := clusters[0]
	size := *rc.Spec.ClusterSize
	if leaders := cmp.Or(deref(rc.Spec.RedisLeader.Replicas), size); leaders != size {
		t.Errorf("RedisCluster: %d leaders for clusterSize %d", leaders, size)
	}
	if followers := cmp.Or(deref(rc.Spec.RedisFollower.Replicas), size); followers < size {
		t.Errorf("RedisCluster: %d followers for %d masters; each master needs a replica to fail over to", followers, size)
	}
	if rc.Spec.KubernetesConfig.RedisSecret == nil {
		t.Error("RedisCluster: Redis requires a password")
	}
	if rc.Spec.Storage == nil || !rc.Spec.Storage.NodeConfVolume {
		t.Error("RedisCluster: nodes.conf on a volume, so a restarted pod rejoins as the same member")
	}
	if cfg := rc.Spec.RedisLeader.RedisConfig; cfg != nil && cfg.AdditionalRedisConfig != nil {
		found := false
		for _, m := range all[*corev1.ConfigMap](objs) {
			if m.Name == *cfg.AdditionalRedisConfig {
				_, found = m.Data["redis-additional.conf"]
			}
		}
		if !found {
			t.Errorf("RedisCluster: ConfigMap %s with redis-additional.conf is missing", *cfg.AdditionalRedisConfig)
		}
	}

	// The services' REDIS_URL: a redis-cluster:// URL whose seeds are the cluster's leaders.
	redisURL := datastoreURL(t, objs, "REDIS_URL")
	var seeds []string
	for i := range size {
		seeds = append(seeds, fmt.Sprintf("%s-leader-%d.%s-leader-headless:6379", rc.Metadata.Name, i, rc.Metadata.Name))
	}
	if want := "redis-cluster://:pw@" + strings.Join(seeds, ","); redisURL != want {
		t.Errorf("REDIS_URL %q, want %q", redisURL, want)
	}

	// RabbitMQ: three nodes, quorum queues, and the services list every node.
	rabbits := all[*RabbitmqCluster](objs)
	if len(rabbits) != 1 {
		t.Fatalf("want one RabbitmqCluster, got %d", len(rabbits))
	}
	rabbit := rabbits[0]
	if r := rabbit.Spec.Replicas; r == nil || *r != 3 {
		t.Error("RabbitMQ cluster: want 3 nodes (a quorum queue keeps a majority through one node's loss)")
	}
	if rabbit.Spec.Rabbitmq == nil || !strings.Contains(rabbit.Spec.Rabbitmq.AdditionalConfig, "default_queue_type = quorum") {
		t.Error("RabbitMQ: default_queue_type = quorum expected")
	}
	amqp := strings.Split(datastoreURL(t, objs, "AMQP_URL"), ",")
	var hosts []string
	for _, u := range amqp {
		hosts = append(hosts, regexp.MustCompile(`^amqp://signal-app:pw@`).ReplaceAllString(u, ""))
	}
	var want []string
	for i := range deref(rabbit.Spec.Replicas) {
		want = append(want, fmt.Sprintf("%s-server-%d.%s-nodes:5672", rabbit.Metadata.Name, i, rabbit.Metadata.Name))
	}
	if !slices.Equal(hosts, want) {
		t.Errorf("AMQP_URL lists %v, want every node %v", hosts, want)
	}
	for _, c := range all[*corev1.ConfigMap](objs) {
		if c.Name == "signal-service-config" && c.Data["AMQP_QUEUE_TYPE"] != "quorum" {
			t.Errorf("AMQP_QUEUE_TYPE=%q: the services must declare quorum queues", c.Data["AMQP_QUEUE_TYPE"])
		}
	}

	// NetworkPolicies: the cluster's members talk on 6379 and the bus port; our workloads and the
	// operator reach 6379; nobody else.
	policies := all[*networkingv1.NetworkPolicy](objs)
	member := endpoint{name: "redis cluster member", namespace: ns, ip: netip.MustParseAddr("10.244.1.4"),
		labels: map[string]string{"app": "signal-redis-leader", "redis_setup_type": "cluster", "role": "leader"}}
	other := endpoint{name: "another member", namespace: ns, ip: netip.MustParseAddr("10.244.1.5"),
		labels: map[string]string{"app": "signal-redis-follower", "redis_setup_type": "cluster", "role": "follower"}}
	cases := []struct {
		from, to endpoint
		port     int32
		want     bool
	}{
		{gateway, member, 6379, true},
		{signals, member, 6379, true},
		{stats, member, 6379, true},
		{worker, member, 6379, true},
		{redisOp, member, 6379, true},
		{other, member, 6379, true},
		{other, member, 16379, true},
		{member, other, 16379, true},
		{gateway, member, 16379, false},
		{otherPod, member, 6379, false},
		{otherPod, member, 16379, false},
	}
	for _, c := range cases {
		if got := allowed(policies, c.from, c.to, c.port); got != c.want {
			t.Errorf("when %s -> %s:%d, then allowed=%v; want %v", c.from.name, c.to.name, c.port, got, c.want)
		}
	}
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
