package app

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/workers"
)

// A real `nexo serve` process for the SIGKILL test: the in-process tests
// cannot kill an App without running its shutdown.
type nexoProc struct {
	id, base string
	env      []string
	cmd      *exec.Cmd
	out      *storetest.LogBuffer
	exited   chan struct{}
}

// buildNexo builds cmd/nexo once into dir.
func buildNexo(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "nexo")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/nexo-im/nexo/cmd/nexo").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/nexo: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProc starts bin as instance id and waits until /readyz answers 200
// (a restart first waits out its own stale heartbeat: up to the TTL).
func startProc(t *testing.T, bin, id string, env []string) *nexoProc {
	t.Helper()
	return startProcArgs(t, bin, id, env)
}

// startProcArgs is startProc with global flags before serve (e.g.
// --config PATH).
func startProcArgs(t *testing.T, bin, id string, env []string, args ...string) *nexoProc {
	t.Helper()
	port := freePort(t)
	p := &nexoProc{id: id, base: fmt.Sprintf("http://127.0.0.1:%d", port), out: &storetest.LogBuffer{}, exited: make(chan struct{}),
		env: append(slices.Clone(env), fmt.Sprintf("NEXO_HTTP_ADDR=127.0.0.1:%d", port), "NEXO_CLUSTER_INSTANCE_ID="+id)}
	p.cmd = exec.Command(bin, append(slices.Clone(args), "serve")...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", id, p.out)
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := client.Get(p.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited before it was ready:\n%s", id, p.out)
		case <-time.After(50 * time.Millisecond): // polling /readyz with a deadline
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 60 s:\n%s", id, p.out)
		}
	}
}

// owners returns GET /admin/cluster as instance id → owned shards.
func owners(t *testing.T, base string) map[string][]int {
	t.Helper()
	code, env := call(t, "GET", base+"/admin/cluster", "", "admin-token")
	if code != 200 {
		t.Fatalf("GET /admin/cluster: %d %v", code, env)
	}
	out := map[string][]int{}
	data, _ := env["data"].(map[string]any)
	list, _ := data["instances"].([]any)
	for _, x := range list {
		in, _ := x.(map[string]any)
		id, _ := in["instance_id"].(string)
		shards := []int{}
		raw, _ := in["shards"].([]any)
		for _, s := range raw {
			shards = append(shards, int(s.(float64)))
		}
		slices.Sort(shards)
		out[id] = shards
	}
	return out
}

// waitOwners waits until /admin/cluster shows exactly live as instances,
// each owning the shards rendezvous hashing gives it.
func waitOwners(t *testing.T, base string, live []string, shards int, what string) {
	t.Helper()
	want := map[string][]int{}
	for _, id := range live {
		want[id] = []int{}
	}
	for s := range shards {
		id := workers.DesiredOwner(live, shards, s)
		want[id] = append(want[id], s)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := owners(t, base)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: shard owners %v, want %v", what, got, want)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestClusterSIGKILLMidStream (issue 11): three `nexo serve` processes on
// one database and one Redis key prefix; while alice (on n1) streams
// messages to twelve conversations, n3 — which owns some of the stream
// shards — gets SIGKILL. Its shards move to n1 and n2; every accepted
// message is saved exactly once; no pull, during or after, ever shows a
// placeholder (nothing here is gone for good); n3 restarts under the same
// instance id and the shards rebalance over all three.
func TestClusterSIGKILLMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three nexo processes")
	}
	t.Parallel()
	cfg := realConfig(t) // skips, or fails under CI, without MariaDB and Redis
	bin := buildNexo(t, t.TempDir())
	const shards = 8
	env := []string{
		"NEXO_MYSQL_DSN=" + cfg.MySQL.DSN, "NEXO_REDIS_ADDR=" + cfg.Redis.Addr, "NEXO_REDIS_KEY_PREFIX=" + cfg.Redis.KeyPrefix,
		"NEXO_JWT_SECRET=" + validSecret, "NEXO_AUTH_BCRYPT_COST=4", "NEXO_ADMIN_TOKEN=admin-token", "NEXO_LOG_LEVEL=warn",
		"NEXO_WS_RATE_LIMIT=0", "NEXO_LIMITS_LOGIN_IP_RATE=0", "NEXO_LIMITS_REGISTER_IP_RATE=0", "NEXO_HTTP_MAX_CONNS_PER_IP=0",
		fmt.Sprintf("NEXO_STREAMS_SHARDS=%d", shards), "NEXO_STREAMS_BLOCK=100ms", "NEXO_STREAMS_CLAIM_MIN_IDLE=2s",
		"NEXO_CLUSTER_HEARTBEAT_INTERVAL=250ms", "NEXO_CLUSTER_INSTANCE_TTL=3s",
	}
	n1, n2, n3 := startProc(t, bin, "n1", env), startProc(t, bin, "n2", env), startProc(t, bin, "n3", env)
	waitOwners(t, n1.base, []string{"n1", "n2", "n3"}, shards, "three instances started")

	alice := dial(t, n1.base, "alice", user(t, n1.base, "alice"))
	var peers, convs []string
	for i := range 12 {
		peer := fmt.Sprintf("bob%02d", i)
		user(t, n2.base, peer)
		peers, convs = append(peers, peer), append(convs, domain.SingleConversationID("alice", peer))
	}

	// A reader on n2 pulls every conversation again and again while the
	// stream and the kill happen: a placeholder would tell a client to skip
	// a seq that is still on its way.
	var mu sync.Mutex
	var placeholders []string
	stopPulls := make(chan struct{})
	pullsDone := make(chan struct{})
	aliceToken := alice.token
	go func() {
		defer close(pullsDone)
		client := &http.Client{Timeout: 5 * time.Second}
		for {
			for _, conv := range convs {
				select {
				case <-stopPulls:
					return
				default:
				}
				resp, err := client.Do(mustRequest("GET", n2.base+"/msg/pull?conversation_id="+conv+"&begin_seq=1", aliceToken))
				if err != nil {
					continue // n2 is busy; the next round pulls again
				}
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(resp.Body)
				resp.Body.Close()
				if bytes.Contains(buf.Bytes(), []byte(`"unavailable"`)) {
					mu.Lock()
					placeholders = append(placeholders, conv+": "+buf.String())
					mu.Unlock()
				}
			}
		}
	}()

	const total = 240
	acked := map[string]map[string]bool{} // conversation -> client_msg_ids ACKed
	for i := range total {
		if i == total/3 {
			if err := n3.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-n3.exited
		}
		peer := peers[i%len(peers)]
		id := fmt.Sprintf("k%03d", i)
		if r := alice.send(peer, id, "through the kill"); r.ErrCode != 0 {
			t.Fatalf("send %s: %d %s", id, r.ErrCode, r.ErrMsg)
		}
		conv := domain.SingleConversationID("alice", peer)
		if acked[conv] == nil {
			acked[conv] = map[string]bool{}
		}
		acked[conv][id] = true
	}
	waitOwners(t, n1.base, []string{"n1", "n2"}, shards, "after n3's SIGKILL")

	// Every accepted message is saved once: each conversation's pull ends
	// at seq len(acked), holds each client_msg_id once, and nothing else.
	deadline := time.Now().Add(60 * time.Second)
	for _, conv := range convs {
		for {
			msgs := pullAll(t, n1.base, aliceToken, conv)
			seen := map[string]int{}
			for _, m := range msgs {
				if id, _ := m["client_msg_id"].(string); id != "" {
					seen[id]++
				}
			}
			complete := len(msgs) == len(acked[conv]) && len(seen) == len(acked[conv])
			for id := range acked[conv] {
				complete = complete && seen[id] == 1
			}
			if complete {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: pulled %d messages (%d distinct), want the %d accepted, each once", conv, len(msgs), len(seen), len(acked[conv]))
			}
			time.Sleep(100 * time.Millisecond) // polling the saved state with a deadline
		}
	}
	close(stopPulls)
	<-pullsDone
	if len(placeholders) > 0 {
		t.Fatalf("%d pulls showed a placeholder for a seq that was still being saved, e.g. %s", len(placeholders), placeholders[0])
	}

	// n3 restarts under its id and gets its share of the shards back.
	startProc(t, bin, "n3", env)
	waitOwners(t, n2.base, []string{"n1", "n2", "n3"}, shards, "after n3 restarted")
}

// mustRequest is a GET with a bearer token.
func mustRequest(method, url, token string) *http.Request {
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}
