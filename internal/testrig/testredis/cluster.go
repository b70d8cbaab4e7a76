package testredis

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/testrig/testwait"
)

// Cluster is a Redis Cluster of three masters (no replicas) owned by one
// test: three redis-server --cluster-enabled processes on free ports, joined
// with redis-cli --cluster create. It is stopped at cleanup.
type Cluster struct {
	Nodes []*Server
	t     testing.TB
}

// StartCluster starts a three-master cluster and waits until every node
// says cluster_state:ok.
func StartCluster(t testing.TB) *Cluster { return StartClusterWithReplicas(t, 0) }

// StartClusterWithReplicas starts three masters with replicas replicas
// each (Nodes: the masters first, as redis-cli assigns them, then the
// replicas), for failover tests; extra are more redis-server arguments
// for every node.
func StartClusterWithReplicas(t testing.TB, replicas int, extra ...string) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("testredis: redis-cli not on PATH (Debian's redis-tools): %v", err)
	}
	c := &Cluster{t: t}
	addrs := make([]string, 3*(1+replicas))
	for i := range addrs {
		n := StartServer(t, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}, extra...)...)
		c.Nodes = append(c.Nodes, n)
		addrs[i] = n.Addr
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testredis: redis-cli --cluster create: %v: %s", err, out)
	}
	// every node says cluster_state:ok, checked in turn (20 s for all)
	ctx := context.Background()
	clients := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr})
	}
	defer func() {
		for _, nc := range clients {
			_ = nc.Close()
		}
	}()
	ok := 0
	var info string
	testwait.Until(t, 20*time.Second, 50*time.Millisecond, func() bool {
		for ; ok < len(clients); ok++ {
			info, err = clients[ok].ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("testredis: cluster node %s not ok: %v %s", c.Nodes[ok].Addr, err, info)
	})
	return c
}

// URL is the cluster's URL in the form taskflow reads: the first node, the
// others as addr parameters.
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr + "?"
	for i, n := range c.Nodes[1:] {
		if i > 0 {
			u += "&"
		}
		u += "addr=" + n.Addr
	}
	return u
}

// Client returns a cluster client, closed at cleanup.
func (c *Cluster) Client() *redis.ClusterClient {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Node is the node of the cluster listening on addr (host:port), nil when
// none is.
func (c *Cluster) Node(addr string) *Server {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}
