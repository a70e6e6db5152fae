package validate

// Operator resources. Their Go types are not importable here (the operators' modules are not on the
// module proxy this project reaches), so each is declared below with the fields of its published CRD
// that matter to this repository, using the upstream field names and k8s.io/api types for embedded
// Kubernetes structures. Decoding is strict, so a misspelt or unsupported field is refused, and
// Check() enforces the fields the CRD marks required. A field used in a manifest but not declared
// here fails the test: add it from the CRD, never loosen the decoding.

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type crd interface{ Check() error }

var crdTypes = map[schema.GroupVersionKind]func() crd{
	{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}:                       func() crd { return &ScaledObject{} },
	{Group: "keda.sh", Version: "v1alpha1", Kind: "TriggerAuthentication"}:              func() crd { return &TriggerAuthentication{} },
	{Group: "mongodbcommunity.mongodb.com", Version: "v1", Kind: "MongoDBCommunity"}:    func() crd { return &MongoDBCommunity{} },
	{Group: "rabbitmq.com", Version: "v1beta1", Kind: "RabbitmqCluster"}:                func() crd { return &RabbitmqCluster{} },
	{Group: "rabbitmq.com", Version: "v1beta1", Kind: "User"}:                           func() crd { return &RabbitmqUser{} },
	{Group: "rabbitmq.com", Version: "v1beta1", Kind: "Permission"}:                     func() crd { return &RabbitmqPermission{} },
	{Group: "redis.redis.opstreelabs.in", Version: "v1beta2", Kind: "RedisReplication"}: func() crd { return &RedisReplication{} },
	{Group: "redis.redis.opstreelabs.in", Version: "v1beta2", Kind: "RedisSentinel"}:    func() crd { return &RedisSentinel{} },
	{Group: "redis.redis.opstreelabs.in", Version: "v1beta2", Kind: "RedisCluster"}:     func() crd { return &RedisCluster{} },
	{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}:               func() crd { return &ExternalSecret{} },
}

type object struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
}

func need(ok bool, field string) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%s is required", field)
}

// --- KEDA (keda.sh/v1alpha1) ---

type ScaledObject struct {
	object `json:",inline"`
	Spec   struct {
		ScaleTargetRef *struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval  *int32 `json:"pollingInterval,omitempty"`
		InitialCooldown  *int32 `json:"initialCooldownPeriod,omitempty"`
		CooldownPeriod   *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount  *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount  *int32 `json:"maxReplicaCount,omitempty"`
		Advanced         *struct {
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
		} `json:"advanced,omitempty"`
		Fallback *struct {
			FailureThreshold int32 `json:"failureThreshold"`
			Replicas         int32 `json:"replicas"`
		} `json:"fallback,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
			MetricType autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

func (s *ScaledObject) Check() error {
	if s.Spec.ScaleTargetRef == nil || s.Spec.ScaleTargetRef.Name == "" {
		return errors.New("spec.scaleTargetRef.name is required")
	}
	if len(s.Spec.Triggers) == 0 {
		return errors.New("spec.triggers is required")
	}
	for i, t := range s.Spec.Triggers {
		if t.Type == "" || t.Metadata == nil {
			return fmt.Errorf("spec.triggers[%d]: type and metadata are required", i)
		}
	}
	if s.Spec.MinReplicaCount != nil && s.Spec.MaxReplicaCount != nil && *s.Spec.MinReplicaCount > *s.Spec.MaxReplicaCount {
		return errors.New("minReplicaCount > maxReplicaCount")
	}
	return nil
}

type TriggerAuthentication struct {
	object `json:",inline"`
	Spec   struct {
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef,omitempty"`
		Env []struct {
			Parameter     string `json:"parameter"`
			Name          string `json:"name"`
			ContainerName string `json:"containerName,omitempty"`
		} `json:"env,omitempty"`
	} `json:"spec"`
}

func (t *TriggerAuthentication) Check() error {
	for i, r := range t.Spec.SecretTargetRef {
		if r.Parameter == "" || r.Name == "" || r.Key == "" {
			return fmt.Errorf("spec.secretTargetRef[%d]: parameter, name and key are required", i)
		}
	}
	return nil
}

// --- MongoDB Community Operator (mongodbcommunity.mongodb.com/v1) ---

type secretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

type MongoDBCommunity struct {
	object `json:",inline"`
	Spec   struct {
		Members                     int    `json:"members"`
		Type                        string `json:"type"`
		Version                     string `json:"version"`
		Arbiters                    int    `json:"arbiters,omitempty"`
		FeatureCompatibilityVersion string `json:"featureCompatibilityVersion,omitempty"`
		Security                    struct {
			Authentication struct {
				Modes              []string `json:"modes"`
				IgnoreUnknownUsers *bool    `json:"ignoreUnknownUsers,omitempty"`
				AgentMode          string   `json:"agentMode,omitempty"`
			} `json:"authentication"`
			TLS *struct {
				Enabled                 bool                         `json:"enabled"`
				Optional                bool                         `json:"optional,omitempty"`
				CertificateKeySecretRef *corev1.LocalObjectReference `json:"certificateKeySecretRef,omitempty"`
				CaCertificateSecretRef  *corev1.LocalObjectReference `json:"caCertificateSecretRef,omitempty"`
				CaConfigMapRef          *corev1.LocalObjectReference `json:"caConfigMapRef,omitempty"`
			} `json:"tls,omitempty"`
		} `json:"security"`
		Users []struct {
			Name              string       `json:"name"`
			DB                string       `json:"db,omitempty"`
			PasswordSecretRef secretKeyRef `json:"passwordSecretRef"`
			Roles             []struct {
				Name string `json:"name"`
				DB   string `json:"db"`
			} `json:"roles"`
			ScramCredentialsSecretName       string         `json:"scramCredentialsSecretName"`
			ConnectionStringSecretName       string         `json:"connectionStringSecretName,omitempty"`
			ConnectionStringSecretNamespace  string         `json:"connectionStringSecretNamespace,omitempty"`
			AdditionalConnectionStringConfig map[string]any `json:"additionalConnectionStringConfig,omitempty"`
		} `json:"users"`
		// Free-form mongod options (x-kubernetes-preserve-unknown-fields in the CRD).
		AdditionalMongodConfig map[string]any `json:"additionalMongodConfig,omitempty"`
		// Merged into the operator's StatefulSet: checked as a StatefulSetSpec.
		StatefulSet *struct {
			Spec     appsv1.StatefulSetSpec `json:"spec"`
			Metadata *metav1.ObjectMeta     `json:"metadata,omitempty"`
		} `json:"statefulSet,omitempty"`
	} `json:"spec"`
}

func (m *MongoDBCommunity) Check() error {
	s := m.Spec
	if err := errors.Join(need(s.Members > 0, "spec.members"), need(s.Type == "ReplicaSet", "spec.type ReplicaSet"),
		need(s.Version != "", "spec.version"), need(len(s.Security.Authentication.Modes) > 0, "spec.security.authentication.modes")); err != nil {
		return err
	}
	for i, u := range s.Users {
		if u.Name == "" || u.PasswordSecretRef.Name == "" || len(u.Roles) == 0 || u.ScramCredentialsSecretName == "" {
			return fmt.Errorf("spec.users[%d]: name, passwordSecretRef.name, roles and scramCredentialsSecretName are required", i)
		}
	}
	return nil
}

// ConnectionSecret is the Secret the operator writes for a user: <name>-<db>-<user> unless named.
func (m *MongoDBCommunity) ConnectionSecrets() map[string][]string {
	out := map[string][]string{}
	for _, u := range m.Spec.Users {
		name := u.ConnectionStringSecretName
		if name == "" {
			db := u.DB
			if db == "" {
				db = "admin"
			}
			name = fmt.Sprintf("%s-%s-%s", m.Metadata.Name, db, u.Name)
		}
		out[name] = []string{"connectionString.standard", "connectionString.standardSrv", "username", "password"}
	}
	return out
}

// --- RabbitMQ Cluster Operator and Messaging Topology Operator (rabbitmq.com/v1beta1) ---

type RabbitmqCluster struct {
	object `json:",inline"`
	Spec   struct {
		Replicas         *int32                        `json:"replicas,omitempty"`
		Image            string                        `json:"image,omitempty"`
		ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
		Service          *struct {
			Type        corev1.ServiceType `json:"type,omitempty"`
			Annotations map[string]string  `json:"annotations,omitempty"`
		} `json:"service,omitempty"`
		Persistence *struct {
			StorageClassName *string            `json:"storageClassName,omitempty"`
			Storage          *resource.Quantity `json:"storage,omitempty"`
		} `json:"persistence,omitempty"`
		Resources   *corev1.ResourceRequirements `json:"resources,omitempty"`
		Affinity    *corev1.Affinity             `json:"affinity,omitempty"`
		Tolerations []corev1.Toleration          `json:"tolerations,omitempty"`
		Rabbitmq    *struct {
			AdditionalPlugins []string `json:"additionalPlugins,omitempty"`
			AdditionalConfig  string   `json:"additionalConfig,omitempty"`
			AdvancedConfig    string   `json:"advancedConfig,omitempty"`
			EnvConfig         string   `json:"envConfig,omitempty"`
		} `json:"rabbitmq,omitempty"`
		TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
		SkipPostDeploySteps           bool   `json:"skipPostDeploySteps,omitempty"`
	} `json:"spec"`
}

func (r *RabbitmqCluster) Check() error {
	if r.Spec.Replicas != nil && *r.Spec.Replicas%2 == 0 {
		return errors.New("spec.replicas must be odd (quorum queues need a majority)")
	}
	return nil
}

type clusterReference struct {
	Name             string                       `json:"name,omitempty"`
	Namespace        string                       `json:"namespace,omitempty"`
	ConnectionSecret *corev1.LocalObjectReference `json:"connectionSecret,omitempty"`
}

type RabbitmqUser struct {
	object `json:",inline"`
	Spec   struct {
		Tags                     []string                     `json:"tags,omitempty"`
		RabbitmqClusterReference clusterReference             `json:"rabbitmqClusterReference"`
		ImportCredentialsSecret  *corev1.LocalObjectReference `json:"importCredentialsSecret,omitempty"`
	} `json:"spec"`
}

func (u *RabbitmqUser) Check() error {
	return need(u.Spec.RabbitmqClusterReference.Name != "", "spec.rabbitmqClusterReference.name")
}

type RabbitmqPermission struct {
	object `json:",inline"`
	Spec   struct {
		User          string                       `json:"user,omitempty"`
		UserReference *corev1.LocalObjectReference `json:"userReference,omitempty"`
		Vhost         string                       `json:"vhost"`
		Permissions   struct {
			Configure string `json:"configure,omitempty"`
			Write     string `json:"write,omitempty"`
			Read      string `json:"read,omitempty"`
		} `json:"permissions"`
		RabbitmqClusterReference clusterReference `json:"rabbitmqClusterReference"`
	} `json:"spec"`
}

func (p *RabbitmqPermission) Check() error {
	return errors.Join(need(p.Spec.Vhost != "", "spec.vhost"),
		need(p.Spec.User != "" || p.Spec.UserReference != nil, "spec.user or spec.userReference"),
		need(p.Spec.RabbitmqClusterReference.Name != "", "spec.rabbitmqClusterReference.name"))
}

// --- OpsTree Redis Operator (redis.redis.opstreelabs.in/v1beta2) ---

// redisKubernetesConfig is the operator's common KubernetesConfig (image required).
type redisKubernetesConfig struct {
	Image            string                            `json:"image"`
	ImagePullPolicy  corev1.PullPolicy                 `json:"imagePullPolicy,omitempty"`
	Resources        *corev1.ResourceRequirements      `json:"resources,omitempty"`
	ImagePullSecrets []corev1.LocalObjectReference     `json:"imagePullSecrets,omitempty"`
	RedisSecret      *secretKeyRef                     `json:"redisSecret,omitempty"`
	UpdateStrategy   *appsv1.StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	MinReadySeconds  *int32                            `json:"minReadySeconds,omitempty"`
}

type redisExporter struct {
	Enabled         bool                         `json:"enabled,omitempty"`
	Port            *int                         `json:"port,omitempty"`
	Image           string                       `json:"image"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy,omitempty"`
}

type redisPDB struct {
	Enabled        bool   `json:"enabled,omitempty"`
	MinAvailable   *int32 `json:"minAvailable,omitempty"`
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// redisPodSpec holds the pod-level fields RedisReplication and RedisSentinel share.
type redisPodSpec struct {
	KubernetesConfig              redisKubernetesConfig             `json:"kubernetesConfig"`
	RedisExporter                 *redisExporter                    `json:"redisExporter,omitempty"`
	NodeSelector                  map[string]string                 `json:"nodeSelector,omitempty"`
	PodSecurityContext            *corev1.PodSecurityContext        `json:"podSecurityContext,omitempty"`
	SecurityContext               *corev1.SecurityContext           `json:"securityContext,omitempty"`
	PriorityClassName             string                            `json:"priorityClassName,omitempty"`
	Affinity                      *corev1.Affinity                  `json:"affinity,omitempty"`
	Tolerations                   []corev1.Toleration               `json:"tolerations,omitempty"`
	TopologySpreadConstraints     []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	PodDisruptionBudget           *redisPDB                         `json:"pdb,omitempty"`
	ReadinessProbe                *corev1.Probe                     `json:"readinessProbe,omitempty"`
	LivenessProbe                 *corev1.Probe                     `json:"livenessProbe,omitempty"`
	ServiceAccountName            *string                           `json:"serviceAccountName,omitempty"`
	TerminationGracePeriodSeconds *int64                            `json:"terminationGracePeriodSeconds,omitempty"`
	Env                           []corev1.EnvVar                   `json:"env,omitempty"`
}

func (p *redisPodSpec) check(size *int32) error {
	return errors.Join(need(size != nil && *size >= 1, "spec.clusterSize (≥ 1)"),
		need(p.KubernetesConfig.Image != "", "spec.kubernetesConfig.image"),
		need(p.KubernetesConfig.RedisSecret == nil || p.KubernetesConfig.RedisSecret.Name != "", "spec.kubernetesConfig.redisSecret.name"),
		need(p.RedisExporter == nil || p.RedisExporter.Image != "", "spec.redisExporter.image"))
}

// RedisReplication: one primary and clusterSize-1 replicas (the operator elects the primary;
// with a RedisSentinel, the sentinels fail it over).
type RedisReplication struct {
	object `json:",inline"`
	Spec   struct {
		ClusterSize  *int32 `json:"clusterSize"`
		redisPodSpec `json:",inline"`
		RedisConfig  *struct {
			AdditionalRedisConfig *string  `json:"additionalRedisConfig,omitempty"`
			DynamicConfig         []string `json:"dynamicConfig,omitempty"`
		} `json:"redisConfig,omitempty"`
		Storage *struct {
			VolumeClaimTemplate corev1.PersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
			KeepAfterDelete     bool                         `json:"keepAfterDelete,omitempty"`
		} `json:"storage,omitempty"`
	} `json:"spec"`
}

func (r *RedisReplication) Check() error { return r.Spec.check(r.Spec.ClusterSize) }

// RedisSentinel: clusterSize sentinels monitoring the primary of the RedisReplication named in
// redisSentinelConfig. The operator exposes them as the Service <name>-sentinel on 26379. The CRD
// leaves redisSentinelConfig optional, but without it the sentinels monitor nothing, so it is
// required here; redisReplicationName is required by the CRD. The tuning fields are strings.
type RedisSentinel struct {
	object `json:",inline"`
	Spec   struct {
		ClusterSize         *int32 `json:"clusterSize"`
		redisPodSpec        `json:",inline"`
		RedisSentinelConfig *struct {
			RedisReplicationName     string               `json:"redisReplicationName"`
			MasterGroupName          string               `json:"masterGroupName,omitempty"`
			RedisPort                string               `json:"redisPort,omitempty"`
			RedisReplicationPassword *corev1.EnvVarSource `json:"redisReplicationPassword,omitempty"`
			AdditionalSentinelConfig *string              `json:"additionalSentinelConfig,omitempty"`
			Quorum                   string               `json:"quorum,omitempty"`
			ParallelSyncs            string               `json:"parallelSyncs,omitempty"`
			FailoverTimeout          string               `json:"failoverTimeout,omitempty"`
			DownAfterMilliseconds    string               `json:"downAfterMilliseconds,omitempty"`
			ResolveHostnames         string               `json:"resolveHostnames,omitempty"`
			AnnounceHostnames        string               `json:"announceHostnames,omitempty"`
		} `json:"redisSentinelConfig,omitempty"`
	} `json:"spec"`
}

func (r *RedisSentinel) Check() error {
	c := r.Spec.RedisSentinelConfig
	return errors.Join(r.Spec.check(r.Spec.ClusterSize),
		need(c != nil, "spec.redisSentinelConfig"),
		need(c == nil || c.RedisReplicationName != "", "spec.redisSentinelConfig.redisReplicationName"))
}

// MasterGroupName is the name the sentinels give the primary (the CRD's default is myMaster).
func (r *RedisSentinel) MasterGroupName() string {
	if c := r.Spec.RedisSentinelConfig; c != nil && c.MasterGroupName != "" {
		return c.MasterGroupName
	}
	return "myMaster"
}

// ServiceName is the Service the operator creates for the sentinels (port 26379).
func (r *RedisSentinel) ServiceName() string { return r.Metadata.Name + "-sentinel" }

// redisClusterRole: the leaders' or the followers' part of a RedisCluster.
type redisClusterRole struct {
	Replicas    *int32 `json:"replicas,omitempty"`
	RedisConfig *struct {
		AdditionalRedisConfig *string `json:"additionalRedisConfig,omitempty"`
	} `json:"redisConfig,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	PodDisruptionBudget       *redisPDB                         `json:"pdb,omitempty"`
	ReadinessProbe            *corev1.Probe                     `json:"readinessProbe,omitempty"`
	LivenessProbe             *corev1.Probe                     `json:"livenessProbe,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	SecurityContext           *corev1.SecurityContext           `json:"securityContext,omitempty"`
}

// RedisCluster: clusterSize masters (leaders), each with redisFollower.replicas / clusterSize
// replicas (followers). The operator names the pods <name>-leader-N and <name>-follower-N, behind
// the headless Services <name>-leader-headless and <name>-follower-headless.
type RedisCluster struct {
	object `json:",inline"`
	Spec   struct {
		ClusterSize        *int32                     `json:"clusterSize"`
		ClusterVersion     *string                    `json:"clusterVersion,omitempty"`
		PersistenceEnabled *bool                      `json:"persistenceEnabled,omitempty"`
		Port               *int32                     `json:"port,omitempty"`
		KubernetesConfig   redisKubernetesConfig      `json:"kubernetesConfig"`
		RedisLeader        redisClusterRole           `json:"redisLeader,omitempty"`
		RedisFollower      redisClusterRole           `json:"redisFollower,omitempty"`
		RedisExporter      *redisExporter             `json:"redisExporter,omitempty"`
		PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
		PriorityClassName  string                     `json:"priorityClassName,omitempty"`
		Env                []corev1.EnvVar            `json:"env,omitempty"`
		Storage            *struct {
			VolumeClaimTemplate         corev1.PersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
			NodeConfVolume              bool                         `json:"nodeConfVolume,omitempty"`
			NodeConfVolumeClaimTemplate corev1.PersistentVolumeClaim `json:"nodeConfVolumeClaimTemplate,omitempty"`
			KeepAfterDelete             bool                         `json:"keepAfterDelete,omitempty"`
		} `json:"storage,omitempty"`
	} `json:"spec"`
}

func (r *RedisCluster) Check() error {
	return errors.Join(need(r.Spec.ClusterSize != nil && *r.Spec.ClusterSize >= 3, "spec.clusterSize (≥ 3: a cluster needs a majority of masters)"),
		need(r.Spec.KubernetesConfig.Image != "", "spec.kubernetesConfig.image"),
		need(r.Spec.KubernetesConfig.RedisSecret == nil || r.Spec.KubernetesConfig.RedisSecret.Name != "", "spec.kubernetesConfig.redisSecret.name"),
		need(r.Spec.RedisExporter == nil || r.Spec.RedisExporter.Image != "", "spec.redisExporter.image"))
}

// --- External Secrets Operator (external-secrets.io/v1) ---

type ExternalSecret struct {
	object `json:",inline"`
	Spec   struct {
		RefreshInterval string `json:"refreshInterval,omitempty"`
		SecretStoreRef  struct {
			Name string `json:"name"`
			Kind string `json:"kind,omitempty"`
		} `json:"secretStoreRef"`
		Target struct {
			Name           string `json:"name,omitempty"`
			CreationPolicy string `json:"creationPolicy,omitempty"`
			DeletionPolicy string `json:"deletionPolicy,omitempty"`
			Immutable      bool   `json:"immutable,omitempty"`
			Template       *struct {
				Type          corev1.SecretType `json:"type,omitempty"`
				EngineVersion string            `json:"engineVersion,omitempty"`
				MergePolicy   string            `json:"mergePolicy,omitempty"`
				Data          map[string]string `json:"data,omitempty"`
			} `json:"template,omitempty"`
		} `json:"target"`
		Data []struct {
			SecretKey string `json:"secretKey"`
			RemoteRef struct {
				Key      string `json:"key"`
				Property string `json:"property,omitempty"`
				Version  string `json:"version,omitempty"`
			} `json:"remoteRef"`
		} `json:"data,omitempty"`
	} `json:"spec"`
}

func (e *ExternalSecret) Check() error {
	if e.Spec.SecretStoreRef.Name == "" {
		return errors.New("spec.secretStoreRef.name is required")
	}
	for i, d := range e.Spec.Data {
		if d.SecretKey == "" || d.RemoteRef.Key == "" {
			return fmt.Errorf("spec.data[%d]: secretKey and remoteRef.key are required", i)
		}
	}
	return nil
}

// Keys returns the Secret this ExternalSecret writes and its keys (the template's, else the data's).
func (e *ExternalSecret) Keys() (string, []string) {
	name := e.Spec.Target.Name
	if name == "" {
		name = e.Metadata.Name
	}
	var keys []string
	if e.Spec.Target.Template != nil && len(e.Spec.Target.Template.Data) > 0 {
		for k := range e.Spec.Target.Template.Data {
			keys = append(keys, k)
		}
		return name, keys
	}
	for _, d := range e.Spec.Data {
		keys = append(keys, d.SecretKey)
	}
	return name, keys
}
