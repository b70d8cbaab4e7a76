package testredis

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
)

// TestStartRetriesATakenPort: a cluster node whose bus port (port+10000)
// is taken by someone else exits at once ("Address already in use"); the
// start is retried on another port instead of failing the test.
func TestStartRetriesATakenPort(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not on PATH: %v", err)
	}
	var port int
	var bus net.Listener
	for try := 0; bus == nil; try++ {
		if try == 20 {
			t.Fatal("no free port whose port+10000 is free too")
		}
		port = freePort(t)
		if port+10000 > 65535 {
			continue
		}
		bus, _ = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
	}
	defer bus.Close()
	s := &Server{dir: t.TempDir(), t: t, Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	t.Cleanup(s.Stop)
	s.start(bin, []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"})
	if s.Port == port {
		t.Fatalf("started on %d although its bus port %d was taken", port, port+10000)
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatalf("the server on %s does not answer: %v", s.Addr, err)
	}
	_ = c.Close()
}
