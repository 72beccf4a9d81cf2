package streams_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/streams"
)

// TestLearnRecordsKeptCountsFromRedisStart: on a Redis never promoted
// from a replica, the records count as whole since the server started
// (INFO server's uptime), not since the Accepter was made; accepts
// answered by that same server move nothing.
func TestLearnRecordsKeptCountsFromRedisStart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 100)
	created, ttl := f.acc.RecordsKept()
	if ttl != time.Hour {
		t.Fatalf("ttl %v, want the Accepter's hour", ttl)
	}
	if _, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("rk-a", "rk-b", "c1"), Route: streams.SaveFirst, Append: true}); err != nil {
		t.Fatal(err)
	}
	info, err := f.rdb.Info(ctx, "server", "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "master_replid2:0000000000000000000000000000000000000000") {
		t.Skip("the test Redis was promoted from a replica: its start says nothing")
	}
	var up int64
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "uptime_in_seconds:"); ok {
			up, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if err := f.acc.LearnRecordsKept(ctx); err != nil {
		t.Fatal(err)
	}
	since, _ := f.acc.RecordsKept()
	start := time.Now().Add(-time.Duration(up) * time.Second)
	if since.After(created) || since.Before(start.Add(-2*time.Second)) || since.After(start.Add(2*time.Second)) {
		t.Fatalf("since %v, want the Redis start %v (uptime %d s; the Accepter made at %v)", since, start, up, created)
	}
	if _, err := f.acc.Accept(ctx, streams.AcceptRequest{Msg: msg("rk-a", "rk-b", "c2"), Route: streams.SaveFirst, Append: true}); err != nil {
		t.Fatal(err)
	}
	if after, _ := f.acc.RecordsKept(); !after.Equal(since) {
		t.Fatalf("since %v after an accept by the same server, want %v", after, since)
	}
}
