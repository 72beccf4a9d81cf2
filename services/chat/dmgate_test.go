package chat

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/account"
)

// memBlocks is an in-memory block store: blocker → blocked.
type memBlocks map[string]map[string]bool

func (m memBlocks) Block(_ context.Context, blocker, blocked string) error {
	if m[blocker] == nil {
		m[blocker] = map[string]bool{}
	}
	m[blocker][blocked] = true
	return nil
}
func (m memBlocks) Unblock(_ context.Context, blocker, blocked string) error {
	delete(m[blocker], blocked)
	return nil
}
func (m memBlocks) Blocks(context.Context, string) ([]domain.Block, error) { return nil, nil }
func (m memBlocks) BlockersOf(_ context.Context, userID string, users []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, u := range users {
		if m[u][userID] {
			out[u] = true
		}
	}
	return out, nil
}

// policies is an in-memory dm_policy store; absent users are everyone.
type policies map[string]domain.DMPolicy

func (p policies) DMPolicy(_ context.Context, id string) (domain.DMPolicy, error) {
	return p[id].OrDefault(), nil
}

func dmService(mode configs.TwoPhase, gate DMGate) *Service {
	return NewService(Deps{Mode: NewMode(mode), Msg: configs.Default().Msg, Accepter: freshAccepter{}, Saver: savedBefore{},
		Users: everyone{}, Fanout: noFanout{}, Log: slog.New(slog.DiscardHandler), DM: gate})
}

func sendText(s *Service, from, to, id string) error {
	_, err := s.Send(context.Background(), Origin{UserID: from}, SendRequest{ClientMsgID: id,
		SessionType: int(domain.SessionSingle), RecvID: to, MsgType: int(domain.MsgText), Content: ContentJSON{Text: "hi"}})
	return err
}

// TestSendAsksTheDMGate: on the two-phase and the synchronous path a
// single-chat send to a user who blocked the sender, or whose dm_policy
// refuses them, is blocked before anything is allocated, with one detail
// for both causes; a block lifted through Forget applies at once.
func TestSendAsksTheDMGate(t *testing.T) {
	for name, mode := range map[string]configs.TwoPhase{"two_phase": {Enabled: true}, "synchronous": {}} {
		t.Run(name, func(t *testing.T) {
			blocks := memBlocks{}
			_ = blocks.Block(context.Background(), "alice", "mallory")
			gate := account.NewDMGate(policies{"bob": domain.DMNobody}, blocks, nil, time.Minute, nil)
			s := dmService(mode, gate)
			blocked := sendText(s, "mallory", "alice", "m-1")
			if r := wire.FromError(blocked); r.Reason != wire.ReasonBlocked || r.ErrCode != 1222 {
				t.Fatalf("blocked sender: %v", blocked)
			}
			byPolicy := sendText(s, "carol", "bob", "c-1")
			if wire.FromError(byPolicy).Reason != wire.ReasonBlocked {
				t.Fatalf("dm_policy nobody: %v", byPolicy)
			}
			if fmt.Sprint(wire.FromError(blocked).Detail) != "alice does not accept messages from you" ||
				wire.FromError(byPolicy).Detail != "bob does not accept messages from you" {
				t.Fatalf("details differ in shape: %q / %q", wire.FromError(blocked).Detail, wire.FromError(byPolicy).Detail)
			}
			if err := sendText(s, "carol", "alice", "c-2"); err != nil {
				t.Fatalf("a user alice did not block: %v", err)
			}
			if err := sendText(s, "bob", "bob", "b-1"); err != nil {
				t.Fatalf("writing to oneself: %v", err)
			}
			_ = blocks.Unblock(context.Background(), "alice", "mallory")
			gate.Forget("alice")
			if err := sendText(s, "mallory", "alice", "m-2"); err != nil {
				t.Fatalf("after unblock: %v", err)
			}
		})
	}
}

// BenchmarkSendSingle measures the two-phase send path (accept faked) of
// a single-chat message without and with the DM gate, its decision cached.
func BenchmarkSendSingle(b *testing.B) {
	for name, gate := range map[string]DMGate{
		"no_gate": nil,
		"gate":    account.NewDMGate(policies{}, memBlocks{}, nil, time.Minute, nil),
	} {
		b.Run(name, func(b *testing.B) {
			s := dmService(configs.TwoPhase{Enabled: true}, gate)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := sendText(s, "alice", "bob", fmt.Sprint("c-", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
