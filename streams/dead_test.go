package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// TestDeadEntriesCapped: a dead-letter entry keeps the metadata fields and
// at most the body cap of the body, cut on a UTF-8 boundary, with the
// original length, the attempts and the source entry.
func TestDeadEntriesCapped(t *testing.T) {
	body := `{"server_msg_id":"s1","text":"` + strings.Repeat("é", 5000) + `"}`
	dl := &streams.DeadLetters{Input: "src", Stream: "dead", MaxBody: 100}
	entry := func(id string, values map[string]any, err string) streams.Dead {
		return streams.Dead{Entry: redis.XMessage{ID: id, Values: values}, Attempts: 3, Err: errors.New(err)}
	}
	c := dl.Commit([]streams.Dead{
		entry("1-1", map[string]any{"m": body, "seq": "7", "r": "s", "c": strings.Repeat("x", 1000)}, strings.Repeat("e", 5000)),
		entry("1-2", map[string]any{"m": "{}"}, "boom"),
	})
	if len(c.ToDead) != 2 || fmt.Sprint(c.Ack) != "[1-1 1-2]" || c.Dead != "dead" || c.Input != "src" {
		t.Fatalf("commit %+v", c)
	}
	d := c.ToDead[0]
	m := d.Fields["m"].(string)
	if len(m) > 100 || !strings.HasPrefix(body, m) || !strings.HasPrefix(m, `{"server_msg_id":"s1"`) {
		t.Fatalf("body kept: %q", m)
	}
	if d.Fields["m_bytes"] != strconv.Itoa(len(body)) || d.Fields["seq"] != "7" || len(d.Fields["c"].(string)) != 256 || len(d.Err) != 1024 {
		t.Fatalf("fields %v, err %d bytes", d.Fields, len(d.Err))
	}
	if d.Fields["attempts"] != "3" || d.Fields["source_entry"] != "1-1" || d.Source != "src" {
		t.Fatalf("attempts, source entry, source: %v %v %q", d.Fields["attempts"], d.Fields["source_entry"], d.Source)
	}
	small := c.ToDead[1]
	if _, cut := small.Fields["m_bytes"]; cut || small.Fields["m"] != "{}" || small.Err != "boom" {
		t.Fatalf("small body changed: %+v", small)
	}
	other := (&streams.DeadLetters{BodyField: "body", MaxBody: 64}).Commit([]streams.Dead{
		entry("2-1", map[string]any{"body": strings.Repeat("b", 100), "m": strings.Repeat("m", 100)}, "x")})
	if f := other.ToDead[0].Fields; len(f["body"].(string)) != 64 || f["body_bytes"] != "100" || len(f["m"].(string)) != 100 {
		t.Fatalf("body field \"body\": %v", f)
	}
}

// TestTrimDead: the dead-letter stream is cut to its length and age
// bounds, on the real Redis and the embedded one.
func TestTrimDead(t *testing.T) {
	for name, open := range storetest.RedisBackends() {
		t.Run(name, func(t *testing.T) {
			rdb, keys := open(t)
			ctx := context.Background()
			key := keys.Prefix + ":{s0}:dead"
			old := time.Now().Add(-2 * time.Hour).UnixMilli()
			for i := range 5 { // five old entries
				rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: strconv.FormatInt(old, 10) + "-" + strconv.Itoa(i+1), Values: []any{"m", "x"}})
			}
			for range 20 {
				rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"m", "x"}})
			}
			if err := streams.TrimDead(ctx, rdb, key, 0, time.Hour); err != nil {
				t.Fatal(err)
			}
			if n := rdb.XLen(ctx, key).Val(); n != 20 {
				t.Fatalf("after the age trim: %d entries, want 20", n)
			}
			if err := streams.TrimDead(ctx, rdb, key, 8, time.Hour); err != nil {
				t.Fatal(err)
			}
			if n := rdb.XLen(ctx, key).Val(); n != 8 {
				t.Fatalf("after the length trim: %d entries, want 8", n)
			}
		})
	}
}
