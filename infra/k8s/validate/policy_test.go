package validate

import (
	"cmp"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var deployables = []string{"api-gateway", "signals", "stats", "webhooks-api", "webhooks-worker"}

func all[T any](objs []Object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.Value.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func deployments(objs []Object) map[string]*appsv1.Deployment {
	out := map[string]*appsv1.Deployment{}
	for _, d := range all[*appsv1.Deployment](objs) {
		out[d.Name] = d
	}
	return out
}

func selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(podLabels))
}

// checkPod holds for every pod we run: non-root with a numeric uid, no service-account token,
// read-only root filesystem, no privilege escalation, all capabilities dropped, requests and limits.
func checkPod(what string, spec corev1.PodSpec, probes bool) []string {
	var errs []string
	fail := func(f string, a ...any) { errs = append(errs, what+": "+fmt.Sprintf(f, a...)) }
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		fail("automountServiceAccountToken must be false")
	}
	psc := spec.SecurityContext
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		nonRoot := (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot) || (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
		uid := (psc != nil && psc.RunAsUser != nil && *psc.RunAsUser > 0) || (sc != nil && sc.RunAsUser != nil && *sc.RunAsUser > 0)
		if !nonRoot || !uid {
			fail("%s: runAsNonRoot with a numeric non-zero runAsUser is required (the image's USER is a name)", c.Name)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			fail("%s: readOnlyRootFilesystem must be true", c.Name)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			fail("%s: allowPrivilegeEscalation must be false", c.Name)
		}
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			fail("%s: capabilities must drop ALL", c.Name)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
			if req.IsZero() || lim.IsZero() {
				fail("%s: %s request and limit are required", c.Name, r)
			} else if req.Cmp(lim) > 0 {
				fail("%s: %s request above its limit", c.Name, r)
			}
		}
		if !regexp.MustCompile(`^signal-service/[a-z-]+:[\w.-]+$`).MatchString(c.Image) {
			fail("%s: image %q is not signal-service/<name>:<tag>", c.Name, c.Image)
		}
		if !probes {
			continue
		}
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if p == nil || p.HTTPGet == nil {
				fail("%s: %s probe (HTTP) is required", c.Name, name)
			} else if p.HTTPGet.Port.StrVal != "" && !ports[p.HTTPGet.Port.StrVal] {
				fail("%s: %s probe names port %q the container does not declare", c.Name, name, p.HTTPGet.Port.StrVal)
			}
		}
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			fail("%s: readiness must use /readyz (dependencies), not %s", c.Name, c.ReadinessProbe.HTTPGet.Path)
		}
		if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path != "/healthz" {
			fail("%s: liveness must use /healthz (the process only: a database outage must not restart pods)", c.Name)
		}
	}
	return errs
}

func TestWhenBuiltThenEveryDeploymentAndJobContainerHasProbesLimitsAndRunsLockedDown(t *testing.T) {
	for _, dir := range targets {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			ds := deployments(objs)
			for _, name := range deployables {
				if ds[name] == nil {
					t.Errorf("no Deployment %s", name)
				}
			}
			for _, d := range ds {
				for _, e := range checkPod("Deployment "+d.Name, d.Spec.Template.Spec, true) {
					t.Error(e)
				}
			}
			jobs := all[*batchv1.Job](objs)
			if len(jobs) != 1 || jobs[0].Name != "create-indexes" {
				t.Fatalf("want the create-indexes Job, got %d jobs", len(jobs))
			}
			// A Job has no readiness/liveness: it runs to completion.
			for _, e := range checkPod("Job create-indexes", jobs[0].Spec.Template.Spec, false) {
				t.Error(e)
			}
			if got := len(jobs[0].Spec.Template.Spec.Containers); got != 4 {
				t.Errorf("create-indexes: want one container per service database, got %d", got)
			}
		})
	}
}

func TestWhenBuiltThenEachDeployableHasAServiceADisruptionBudgetAndAutoscaling(t *testing.T) {
	for _, dir := range targets {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			ds := deployments(objs)
			for _, d := range ds {
				podLabels := d.Spec.Template.Labels
				if !selects(d.Spec.Selector, podLabels) {
					t.Errorf("%s: selector does not match its pod template", d.Name)
				}
				pdbs := 0
				for _, p := range all[*policyv1.PodDisruptionBudget](objs) {
					if selects(p.Spec.Selector, podLabels) {
						pdbs++
					}
				}
				if pdbs != 1 {
					t.Errorf("%s: want exactly one PodDisruptionBudget, got %d", d.Name, pdbs)
				}
				services := 0
				for _, s := range all[*corev1.Service](objs) {
					if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(podLabels)) {
						services++
						for _, p := range s.Spec.Ports {
							if !slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.StrVal }) {
								t.Errorf("Service %s: targetPort %q is not a named port of %s", s.Name, p.TargetPort.String(), d.Name)
							}
						}
					}
				}
				if want := map[bool]int{true: 0, false: 1}[d.Name == "webhooks-worker"]; services != want {
					t.Errorf("%s: want %d Service, got %d", d.Name, want, services)
				}
			}
			scalers := map[string][]string{}
			for _, h := range all[*autoscalingv2.HorizontalPodAutoscaler](objs) {
				if ds[h.Spec.ScaleTargetRef.Name] == nil {
					t.Errorf("HPA %s targets a missing Deployment", h.Name)
				}
				cpu := slices.ContainsFunc(h.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
					return m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
				})
				if !cpu {
					t.Errorf("HPA %s does not scale on CPU", h.Name)
				}
				scalers[h.Spec.ScaleTargetRef.Name] = append(scalers[h.Spec.ScaleTargetRef.Name], "hpa")
			}
			for _, s := range all[*ScaledObject](objs) {
				types := []string{}
				for _, tr := range s.Spec.Triggers {
					types = append(types, tr.Type)
				}
				if !slices.Contains(types, "cpu") || !slices.Contains(types, "rabbitmq") {
					t.Errorf("ScaledObject %s: want cpu and rabbitmq triggers, got %v", s.Metadata.Name, types)
				}
				scalers[s.Spec.ScaleTargetRef.Name] = append(scalers[s.Spec.ScaleTargetRef.Name], "keda")
			}
			for _, name := range []string{"api-gateway", "signals", "webhooks-worker"} {
				if len(scalers[name]) != 1 {
					t.Errorf("%s: want exactly one autoscaler (HPA or KEDA), got %v", name, scalers[name])
				}
				if d := ds[name]; d != nil && d.Spec.Replicas != nil {
					t.Errorf("%s: autoscaled, so spec.replicas must be unset (apply would reset the scale)", name)
				}
			}
			if strings.HasPrefix(dir, "overlays/prod") && !slices.Equal(scalers["webhooks-worker"], []string{"keda"}) {
				t.Errorf("prod: the worker scales through KEDA on queue depth, got %v", scalers["webhooks-worker"])
			}
		})
	}
}

// provided lists the Secret keys an overlay makes available: Secrets in the output (none are
// committed), ExternalSecret targets and the MongoDB operator's connection Secrets.
func provided(objs []Object) map[string][]string {
	keys := map[string][]string{}
	for _, e := range all[*ExternalSecret](objs) {
		name, k := e.Keys()
		keys[name] = append(keys[name], k...)
	}
	for _, m := range all[*MongoDBCommunity](objs) {
		for name, k := range m.ConnectionSecrets() {
			keys[name] = append(keys[name], k...)
		}
	}
	return keys
}

func TestWhenBuiltThenEveryConfigAndSecretReferenceResolves(t *testing.T) {
	// dev: the two Secrets are created by hand (infra/k8s/README.md) with exactly these keys.
	devSecrets := map[string][]string{
		"signal-service-secrets":    {"INTERNAL_JWT_PRIVATE_KEY", "INTERNAL_JWT_PUBLIC_KEY", "API_KEY_PEPPER", "SESSION_JWT_SECRET", "INGEST_TOKEN"},
		"signal-service-datastores": {"GATEWAY_MONGO_URL", "SIGNALS_MONGO_URL", "STATS_MONGO_URL", "WEBHOOKS_MONGO_URL", "REDIS_URL", "AMQP_URL"},
	}
	for _, dir := range []string{"overlays/dev", "overlays/prod", "overlays/prod-cluster"} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			for _, s := range all[*corev1.Secret](objs) {
				t.Errorf("Secret %s is in the manifests: secrets come from outside the repository", s.Name)
			}
			secrets := provided(objs)
			if dir == "overlays/dev" {
				secrets = devSecrets
			}
			configMaps := map[string]map[string]string{}
			for _, c := range all[*corev1.ConfigMap](objs) {
				configMaps[c.Name] = c.Data
			}
			var pods []struct {
				what string
				spec corev1.PodSpec
			}
			for _, d := range all[*appsv1.Deployment](objs) {
				pods = append(pods, struct {
					what string
					spec corev1.PodSpec
				}{"Deployment " + d.Name, d.Spec.Template.Spec})
			}
			for _, j := range all[*batchv1.Job](objs) {
				pods = append(pods, struct {
					what string
					spec corev1.PodSpec
				}{"Job " + j.Name, j.Spec.Template.Spec})
			}
			for _, p := range pods {
				for _, v := range p.spec.Volumes {
					if v.ConfigMap != nil && configMaps[v.ConfigMap.Name] == nil {
						t.Errorf("%s: volume %s names missing ConfigMap %s", p.what, v.Name, v.ConfigMap.Name)
					}
				}
				for _, c := range p.spec.Containers {
					if len(c.EnvFrom) > 0 {
						t.Errorf("%s/%s: envFrom hides which variables are set; list them under env", p.what, c.Name)
					}
					for _, e := range c.Env {
						if e.ValueFrom == nil {
							if strings.Contains(e.Value, "@") || regexp.MustCompile(`(?i)secret|pepper|token|password`).MatchString(e.Name) {
								t.Errorf("%s/%s: %s is set inline; credentials come from a Secret", p.what, c.Name, e.Name)
							}
							continue
						}
						if r := e.ValueFrom.SecretKeyRef; r != nil && !slices.Contains(secrets[r.Name], r.Key) {
							t.Errorf("%s/%s: %s reads Secret %s key %s, which nothing provides", p.what, c.Name, e.Name, r.Name, r.Key)
						}
						if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
							_, ok := configMaps[r.Name][r.Key]
							if !ok && (r.Optional == nil || !*r.Optional) {
								t.Errorf("%s/%s: %s reads ConfigMap %s key %s, which does not exist", p.what, c.Name, e.Name, r.Name, r.Key)
							}
						}
					}
				}
			}
		})
	}
}

func TestWhenProdIsBuiltThenTheDataTierIsReplicatedThroughItsOperators(t *testing.T) {
	objs := build(t, "overlays/prod")
	mongo := all[*MongoDBCommunity](objs)
	rabbit := all[*RabbitmqCluster](objs)
	redis := all[*RedisReplication](objs)
	sentinels := all[*RedisSentinel](objs)
	if len(mongo) != 1 || len(rabbit) != 1 || len(redis) != 1 || len(sentinels) != 1 {
		t.Fatalf("want one MongoDBCommunity, RabbitmqCluster, RedisReplication and RedisSentinel, got %d %d %d %d",
			len(mongo), len(rabbit), len(redis), len(sentinels))
	}
	if mongo[0].Spec.Members < 3 {
		t.Errorf("MongoDB replica set has %d members", mongo[0].Spec.Members)
	}
	for _, u := range mongo[0].Spec.Users {
		for _, r := range u.Roles {
			if r.DB != u.Name || r.Name != "readWrite" {
				t.Errorf("MongoDB user %s: role %s on %s; each service reads and writes only its own database", u.Name, r.Name, r.DB)
			}
		}
	}
	if r := rabbit[0].Spec.Replicas; r == nil || *r < 3 {
		t.Error("RabbitMQ cluster needs 3 nodes for quorum queues")
	}
	if rabbit[0].Spec.Rabbitmq == nil || !strings.Contains(rabbit[0].Spec.Rabbitmq.AdditionalConfig, "default_queue_type = quorum") {
		t.Error("RabbitMQ: default_queue_type = quorum expected")
	}
	if n := redis[0].Spec.ClusterSize; n == nil || *n < 3 {
		t.Error("Redis: want a primary and two replicas (clusterSize ≥ 3)")
	}
	sentinel := sentinels[0]
	if n := sentinel.Spec.ClusterSize; n == nil || *n < 3 || *n%2 == 0 {
		t.Error("Redis Sentinel: want an odd number of sentinels, at least 3, so a majority can fail over")
	} else if q, err := strconv.Atoi(cmp.Or(sentinel.Spec.RedisSentinelConfig.Quorum, "2")); err != nil || q <= int(*n)/2 || q > int(*n) {
		t.Errorf("Redis Sentinel: quorum %q of %d sentinels is not a majority", sentinel.Spec.RedisSentinelConfig.Quorum, *n)
	}
	if got := sentinel.Spec.RedisSentinelConfig.RedisReplicationName; got != redis[0].Metadata.Name {
		t.Errorf("Redis Sentinel monitors RedisReplication %q, want %q", got, redis[0].Metadata.Name)
	}
	if redis[0].Spec.KubernetesConfig.RedisSecret == nil || sentinel.Spec.KubernetesConfig.RedisSecret == nil ||
		sentinel.Spec.RedisSentinelConfig.RedisReplicationPassword == nil {
		t.Error("Redis and its sentinels require a password, and the sentinels authenticate to the primary")
	}
	checkRedisURL(t, objs, sentinel)
	cm := map[string]string{}
	for _, c := range all[*corev1.ConfigMap](objs) {
		if c.Name == "signal-service-config" {
			cm = c.Data
		}
	}
	if cm["AMQP_QUEUE_TYPE"] != "quorum" || cm["NODE_ENV"] != "production" {
		t.Errorf("prod config: AMQP_QUEUE_TYPE=%q NODE_ENV=%q", cm["AMQP_QUEUE_TYPE"], cm["NODE_ENV"])
	}
	for _, d := range all[*appsv1.Deployment](objs) {
		if strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, ":latest") {
			t.Errorf("%s: prod pins an image tag", d.Name)
		}
	}
}

// checkRedisURL: the services' REDIS_URL (the signal-service-datastores template) names the
// sentinels' Service on 26379 and their master group, with the password for the primary and, as
// the sentinels require it too, sentinelPassword (packages/service-kit/src/redis.ts).
func checkRedisURL(t *testing.T, objs []Object, sentinel *RedisSentinel) {
	t.Helper()
	var tmpl string
	for _, e := range all[*ExternalSecret](objs) {
		if name, _ := e.Keys(); name == "signal-service-datastores" && e.Spec.Target.Template != nil {
			tmpl = e.Spec.Target.Template.Data["REDIS_URL"]
		}
	}
	// The template's placeholders stand for the password.
	raw := regexp.MustCompile(`\{\{[^}]*\}\}`).ReplaceAllString(tmpl, "pw")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("REDIS_URL template %q: %v", tmpl, err)
	}
	pw, _ := u.User.Password()
	want := "redis-sentinel://:pw@" + sentinel.ServiceName() + ":26379/" + sentinel.MasterGroupName()
	if got := u.Scheme + "://:" + pw + "@" + u.Host + u.Path; got != want || u.Query().Get("sentinelPassword") != "pw" {
		t.Errorf("REDIS_URL template %q: want %s?sentinelPassword=… (the sentinels of RedisSentinel %s)", tmpl, want, sentinel.Metadata.Name)
	}
}
