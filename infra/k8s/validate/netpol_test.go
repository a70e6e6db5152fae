package validate

import (
	"fmt"
	"net/netip"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// endpoint is one side of a connection: a pod (labels, its namespace) or an address outside.
type endpoint struct {
	name      string
	namespace string // "" = outside the cluster
	labels    map[string]string
	ip        netip.Addr
}

const ns = "signal-prod"

func pod(name string, ip string) endpoint {
	return endpoint{name: name, namespace: ns, ip: netip.MustParseAddr(ip),
		labels: map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "signal-service"}}
}

var (
	gateway    = pod("api-gateway", "10.244.0.10")
	signals    = pod("signals", "10.244.0.11")
	stats      = pod("stats", "10.244.0.12")
	webhooks   = pod("webhooks-api", "10.244.0.13")
	worker     = pod("webhooks-worker", "10.244.0.14")
	mongoPod   = endpoint{name: "mongo", namespace: ns, ip: netip.MustParseAddr("10.244.1.1"), labels: map[string]string{"app": "signal-mongo-svc"}}
	redisPod   = endpoint{name: "redis", namespace: ns, ip: netip.MustParseAddr("10.244.1.2"), labels: map[string]string{"app": "signal-redis", "redis_setup_type": "replication", "role": "replication"}}
	sentinel   = endpoint{name: "redis sentinel", namespace: ns, ip: netip.MustParseAddr("10.244.1.3"), labels: map[string]string{"app": "signal-redis-sentinel", "redis_setup_type": "sentinel", "role": "sentinel"}}
	redisOp    = endpoint{name: "redis operator", namespace: "ot-operators", ip: netip.MustParseAddr("10.244.5.1"), labels: map[string]string{"name": "redis-operator"}}
	ingressCtl = endpoint{name: "ingress-nginx", namespace: "ingress-nginx", ip: netip.MustParseAddr("10.244.2.1"), labels: map[string]string{"app": "ingress-nginx"}}
	otherPod   = endpoint{name: "another team's pod", namespace: "other", ip: netip.MustParseAddr("10.244.3.1"), labels: map[string]string{"app": "x"}}
	ingestJob  = endpoint{name: "an ingest pod", namespace: ns, ip: netip.MustParseAddr("10.244.0.20"), labels: map[string]string{"signal-service/ingest": "true"}}
	kubeDNS    = endpoint{name: "kube-dns", namespace: "kube-system", ip: netip.MustParseAddr("10.244.4.1"), labels: map[string]string{"k8s-app": "kube-dns"}}
	internet   = endpoint{name: "a public receiver", ip: netip.MustParseAddr("93.184.216.34")}
	internet6  = endpoint{name: "a public IPv6 receiver", ip: netip.MustParseAddr("2606:2800:220:1::1")}
	metadata   = endpoint{name: "cloud metadata", ip: netip.MustParseAddr("169.254.169.254")}
	metadata6  = endpoint{name: "cloud metadata (IPv6)", ip: netip.MustParseAddr("fd00:ec2::254")}
	privateNet = endpoint{name: "a private host", ip: netip.MustParseAddr("192.168.1.20")}
	nodeNet    = endpoint{name: "a node or service address", ip: netip.MustParseAddr("10.96.0.1")}
)

func matchSelector(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}

// peerMatches follows the NetworkPolicy API: podSelector alone = pods of the policy's namespace;
// namespaceSelector (+ podSelector) = pods of matching namespaces; ipBlock = addresses (cidr minus except).
func peerMatches(p networkingv1.NetworkPolicyPeer, e endpoint) bool {
	if p.IPBlock != nil {
		cidr := netip.MustParsePrefix(p.IPBlock.CIDR)
		if !cidr.Contains(e.ip) {
			return false
		}
		for _, ex := range p.IPBlock.Except {
			if netip.MustParsePrefix(ex).Contains(e.ip) {
				return false
			}
		}
		return true
	}
	if e.namespace == "" {
		return false
	}
	if p.NamespaceSelector != nil {
		if !matchSelector(p.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": e.namespace}) {
			return false
		}
	} else if e.namespace != ns {
		return false
	}
	return p.PodSelector == nil || matchSelector(p.PodSelector, e.labels)
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Port == nil || (p.Port.IntVal == port && p.EndPort == nil) || (p.EndPort != nil && p.Port.IntVal <= port && port <= *p.EndPort) {
			return true
		}
	}
	return false
}

func peersMatch(peers []networkingv1.NetworkPolicyPeer, e endpoint) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if peerMatches(p, e) {
			return true
		}
	}
	return false
}

func has(types []networkingv1.PolicyType, t networkingv1.PolicyType) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// allowed: a connection needs the source's egress and the destination's ingress to allow it;
// a pod no policy selects (for that direction) is unrestricted.
func allowed(policies []*networkingv1.NetworkPolicy, from, to endpoint, port int32) bool {
	side := func(self, peer endpoint, t networkingv1.PolicyType) bool {
		if self.namespace != ns {
			return true // outside our namespace: not ours to police
		}
		selected, ok := false, false
		for _, p := range policies {
			if !has(p.Spec.PolicyTypes, t) || !matchSelector(&p.Spec.PodSelector, self.labels) {
				continue
			}
			selected = true
			if t == networkingv1.PolicyTypeIngress {
				for _, r := range p.Spec.Ingress {
					ok = ok || (peersMatch(r.From, peer) && portMatches(r.Ports, port))
				}
			} else {
				for _, r := range p.Spec.Egress {
					ok = ok || (peersMatch(r.To, peer) && portMatches(r.Ports, port))
				}
			}
		}
		return !selected || ok
	}
	return side(from, to, networkingv1.PolicyTypeEgress) && side(to, from, networkingv1.PolicyTypeIngress)
}

func TestWhenProdIsBuiltThenNetworkPoliciesAllowOnlyTheDesignedPaths(t *testing.T) {
	objs := build(t, "overlays/prod")
	policies := all[*networkingv1.NetworkPolicy](objs)
	for _, p := range policies {
		for _, r := range p.Spec.Egress {
			for _, peer := range r.To {
				if b := peer.IPBlock; b != nil {
					cidr := netip.MustParsePrefix(b.CIDR)
					for _, ex := range b.Except {
						if e := netip.MustParsePrefix(ex); !cidr.Contains(e.Addr()) || e.Bits() < cidr.Bits() {
							t.Errorf("%s: except %s is not inside %s", p.Name, ex, b.CIDR)
						}
					}
				}
			}
		}
	}
	cases := []struct {
		from, to endpoint
		port     int32
		want     bool
	}{
		// Only the gateway takes outside traffic, and in prod only through the ingress controller.
		{ingressCtl, gateway, 4000, true},
		{otherPod, gateway, 4000, false},
		{ingressCtl, signals, 4001, false},
		{ingressCtl, stats, 4002, false},
		{ingressCtl, webhooks, 4003, false},
		{ingressCtl, worker, 4004, false},
		{otherPod, signals, 4001, false},
		// Services accept only the gateway.
		{gateway, signals, 4001, true},
		{gateway, stats, 4002, true},
		{gateway, webhooks, 4003, true},
		{signals, stats, 4002, false},
		{worker, signals, 4001, false},
		{stats, webhooks, 4003, false},
		{gateway, worker, 4004, false},
		// Ingest (simulator, pipeline) reaches signals only, and only when labelled for it.
		{ingestJob, signals, 4001, true},
		{ingestJob, stats, 4002, false},
		{ingestJob, webhooks, 4003, false},
		{ingestJob, gateway, 4000, false}, // prod: the gateway only through the ingress controller
		// The data tier: our workloads on client ports; nobody else.
		{signals, mongoPod, 27017, true},
		{worker, mongoPod, 27017, true},
		{otherPod, mongoPod, 27017, false},
		{gateway, mongoPod, 22, false},
		// Redis through Sentinel: clients ask a sentinel for the primary, then connect to it.
		{gateway, sentinel, 26379, true},
		{stats, sentinel, 26379, true},
		{gateway, redisPod, 6379, true},
		{stats, redisPod, 6379, true},
		{otherPod, sentinel, 26379, false},
		{otherPod, redisPod, 6379, false},
		{gateway, redisPod, 26379, false},
		{gateway, sentinel, 6379, false},
		// Sentinels monitor Redis and each other; replicas follow the primary; the operator reaches both.
		{sentinel, redisPod, 6379, true},
		{sentinel, sentinel, 26379, true},
		{redisPod, redisPod, 6379, true},
		{redisOp, redisPod, 6379, true},
		{redisOp, sentinel, 26379, true},
		{redisPod, sentinel, 26379, false},
		// The worker reaches the internet, never cluster, private or metadata ranges.
		{worker, internet, 443, true},
		{worker, internet, 8443, true},
		{worker, internet6, 443, true},
		{worker, metadata, 80, false},
		{worker, metadata6, 80, false},
		{worker, privateNet, 443, false},
		{worker, nodeNet, 443, false},
		{worker, otherPod, 8080, false},
		// DNS for everyone.
		{worker, kubeDNS, 53, true},
		{gateway, kubeDNS, 53, true},
		// Nothing else goes out.
		{gateway, internet, 443, false},
		{signals, internet, 443, false},
		{stats, metadata, 80, false},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s -> %s:%d", c.from.name, c.to.name, c.port)
		if got := allowed(policies, c.from, c.to, c.port); got != c.want {
			t.Errorf("when %s, then allowed=%v; want %v", name, got, c.want)
		}
	}
}
