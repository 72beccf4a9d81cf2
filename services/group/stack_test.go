package group_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/gateway/ws/wstest"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// stack is the real message pipeline in process: chat.Service (accept
// step, synchronous path), the save and deliver stages, the group service
// whose notifications go through chat.Service.SendSystem, and chat.Puller
// with the group bounds. Pushes land in the env's fake registry.
type stack struct {
	*env
	chat   *chat.Service
	puller *chat.Puller
	svc    *group.Service
	seqs   *store.SeqRepo
}

func newStack(t *testing.T, mode configs.TwoPhase) *stack {
	e := newEnv(t, func(c *configs.Config) {
		c.Group.Push.Mode = configs.GroupPushPush
		c.Streams.Shards = 2
		c.Streams.Block = 50 * time.Millisecond
		c.Save.BatchWait = time.Millisecond
	})
	keys := streams.NewKeys(e.keys.Prefix, e.cfg.Streams.Shards)
	seqs := store.NewSeqRepo(e.db)
	msgs := store.NewMessageRepo(e.db)
	acc := streams.NewAccepter(e.rdb, keys, seqs, 100, time.Hour)
	pusher := chat.NewPusher(ws.NewPushes(e.reg, quiet))
	async := chat.NewAsyncFanout(4096, 2, pusher, e.fanout, nil, nil, quiet)
	svc := chat.NewService(chat.Deps{Mode: chat.NewMode(mode), Msg: e.cfg.Msg, Accepter: acc, Saver: msgs, Leaser: seqs,
		Users: e.users, Groups: e.members, Fanout: async, Log: quiet})
	metrics := workers.NewMetrics(nil)
	save := workers.NewSaveHandler(workers.SaveDeps{Keys: keys, Redis: e.rdb, Messages: msgs, Seqs: seqs, Allocator: acc,
		Pusher: pusher, Metrics: metrics, Log: quiet, BatchWait: e.cfg.Save.BatchWait, BatchSize: e.cfg.Save.BatchSize})
	deliver := workers.NewDeliverHandler(workers.DeliverDeps{Keys: keys, Redis: e.rdb, Pusher: pusher, Groups: e.fanout,
		Metrics: metrics, Log: quiet})
	p := workers.NewPipeline(e.rdb, keys, e.cfg.Streams, e.cfg.Save, "n1", save, deliver, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = p.Run(ctx); done <- struct{}{} }()
	go func() { _ = async.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &stack{env: e, chat: svc, puller: chat.NewPuller(msgs, seqs, e.members, streams.NewInFlightReader(e.rdb, keys)), svc: e.service(svc), seqs: seqs}
}

var sendN atomic.Int64

// send sends a text message to the group as sender from connection conn.
func (s *stack) send(sender, groupID, conn string) (chat.AckJSON, error) {
	return s.chat.Send(bg, chat.Origin{UserID: sender, ConnID: conn}, chat.SendRequest{ClientMsgID: fmt.Sprintf("m%d", sendN.Add(1)),
		SessionType: int(domain.SessionGroup), GroupID: groupID, MsgType: int(domain.MsgText), Content: chat.ContentJSON{Text: "hello"}})
}

// waitSaved waits until the conversation's saved max seq reaches seq.
func (s *stack) waitSaved(t *testing.T, groupID string, seq int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := s.seqs.MaxSeq(bg, domain.GroupConversationID(groupID))
		if err == nil && got >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("saved max seq %d, want %d (%v)", got, seq, err)
		}
		time.Sleep(10 * time.Millisecond) // polling the database with a deadline, not synchronising
	}
}

// pullAll pulls every message userID may see, page by page.
func (s *stack) pullAll(t *testing.T, userID, groupID string) (msgs []chat.MessageJSON, minSeq, maxSeq int64) {
	t.Helper()
	conv := domain.GroupConversationID(groupID)
	var begin int64 = 1
	for {
		res, err := s.puller.Pull(bg, userID, chat.PullRequest{ConversationID: conv, BeginSeq: begin, Limit: 50})
		if err != nil {
			t.Fatalf("pull as %s: %v", userID, err)
		}
		minSeq, maxSeq = res.MinSeq, res.MaxSeq
		msgs = append(msgs, res.Messages...)
		if len(res.Messages) == 0 || res.Messages[len(res.Messages)-1].Seq >= res.MaxSeq {
			return msgs, minSeq, maxSeq
		}
		begin = res.Messages[len(res.Messages)-1].Seq + 1
	}
}

// pushedSeqs returns the seqs of the 2001 pushes user received on any
// connection, and fails if one connection got one twice.
func pushedSeqs(t *testing.T, r *wstest.Recorder, user string) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	type key struct {
		conn string
		seq  int64
	}
	seen := map[key]bool{}
	for _, f := range r.PushesOf(user, wire.PushMsg) {
		if k := (key{f.Conn, f.Seq()}); seen[k] {
			t.Fatalf("%s's connection %s got seq %d twice", user, f.Conn, f.Seq())
		} else {
			seen[k] = true
		}
		out[f.Seq()] = true
	}
	return out
}

var pipelineModes = []struct {
	name string
	mode configs.TwoPhase
}{
	{"save_first", configs.TwoPhase{Enabled: true, FailOpen: true, IdempotencyTTL: time.Hour}},
	{"deliver_first", configs.TwoPhase{Enabled: true, DeliverBeforeSaved: true, FailOpen: true, IdempotencyTTL: time.Hour}},
	{"synchronous", configs.TwoPhase{Enabled: false, FailOpen: true, IdempotencyTTL: time.Hour}},
}
