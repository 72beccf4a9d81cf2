package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
	"github.com/nexo-im/nexo/streams"
)

// --- fakes of the collaborators that are not push's own.

type fakePresence struct {
	mu         sync.Mutex
	foreground map[string]bool
}

func (p *fakePresence) Lookup(_ context.Context, ids []string) ([]store.UserPresence, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]store.UserPresence, len(ids))
	for i, id := range ids {
		out[i] = store.UserPresence{UserID: id, Online: p.foreground[id], Foreground: p.foreground[id]}
	}
	return out, nil
}

type fakeMembers map[string]map[string]int

func (m fakeMembers) ActiveMembers(_ context.Context, g string) (map[string]int, error) {
	if x, ok := m[g]; ok {
		return x, nil
	}
	return nil, domain.ErrGroupNotFound
}

// fakeConvs: recv_msg_opt per user+conversation, and each user's unread
// total as one conversation's count.
type fakeConvs struct {
	opt    map[string]int // user + "/" + conversation
	unread map[string]int64
}

func (c fakeConvs) States(_ context.Context, owner string, ids []string) ([]store.ConversationState, error) {
	var out []store.ConversationState
	for _, id := range ids {
		out = append(out, store.ConversationState{ConversationID: id, RecvMsgOpt: c.opt[owner+"/"+id]})
	}
	return out, nil
}

func (c fakeConvs) StatesPage(_ context.Context, owner, after string, _ int) ([]store.ConversationState, error) {
	if after != "" || c.unread[owner] == 0 {
		return nil, nil
	}
	return []store.ConversationState{{ConversationID: "c_" + owner, MaxSeq: c.unread[owner]}}, nil
}

func (c fakeConvs) UnreadCounts(_ context.Context, user string, ranges []store.SeqRange) (map[string]int64, error) {
	out := map[string]int64{}
	for _, r := range ranges {
		out[r.ConversationID] = r.Upto - r.After
	}
	return out, nil
}

type fakeNames map[string]string

func (n fakeNames) Nicknames(_ context.Context, ids []string) (map[string]string, error) {
	return n, nil
}

// harness runs the resolve stage and the three senders against local
// receivers, on the test Redis and MariaDB.
type harness struct {
	t        *testing.T
	rdb      *redis.Client
	keys     Keys
	cfg      configs.Push
	repo     *store.PushDeviceRepo
	svc      *Service
	enq      *Enqueuer
	presence *fakePresence
	members  fakeMembers
	convs    fakeConvs
	web      *webPushReceiver
	fcm      *fcmReceiver
	apns     *apnsReceiver
	metrics  *Metrics
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func testConfig() configs.Push {
	cfg := configs.Default().Push
	cfg.Enabled = true
	cfg.RetryBackoff, cfg.RetryBackoffMax, cfg.MaxAttempts = 100*time.Millisecond, 400*time.Millisecond, 4
	cfg.WebPush.AllowInsecureEndpoints = true
	return cfg
}

func newHarness(t *testing.T, cfg configs.Push) *harness {
	t.Helper()
	db := storetest.MySQL(t)
	rdb, prefix := storetest.Redis(t)
	repo, err := store.NewPushDeviceRepo(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	cfg.WebPush.VAPIDPublicKey, cfg.WebPush.VAPIDPrivateKey = pub, priv
	h := &harness{t: t, rdb: rdb, keys: NewKeys(prefix), cfg: cfg, repo: repo, presence: &fakePresence{foreground: map[string]bool{}},
		members: fakeMembers{}, convs: fakeConvs{opt: map[string]int{}, unread: map[string]int64{}}, metrics: NewMetrics(nil)}
	h.web, h.fcm, h.apns = newWebPushReceiver(t, pub), newFCMReceiver(t), newAPNsReceiver(t)
	h.cfg.FCM.CredentialsFile, h.cfg.FCM.Endpoint = h.fcm.keyFile, h.fcm.srv.URL
	h.cfg.APNs = configs.PushAPNs{KeyFile: h.apns.keyFile, KeyID: apnsKeyID, TeamID: apnsTeamID, Topic: apnsTopic,
		Endpoint: h.apns.srv.URL, Concurrency: 4}
	enabled := map[string]bool{ProviderFCM: true, ProviderAPNs: true, ProviderWebPush: true}
	h.svc = NewService(repo, h.cfg, enabled, pub)
	h.enq = NewEnqueuer(h.keys)
	t.Cleanup(func() {
		h.stop()
		h.web.checkNoErrors()
		h.fcm.checkNoErrors()
		h.apns.checkNoErrors()
	})
	return h
}

// start runs the stages as consumer name.
func (h *harness) start(name string) {
	t := h.t
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	log := slog.New(slog.DiscardHandler)
	fcm, err := NewFCM(ctx, h.cfg.FCM, nil)
	if err != nil {
		t.Fatal(err)
	}
	apns, err := NewAPNs(h.cfg.APNs, h.apns.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	enabled := map[string]bool{ProviderFCM: true, ProviderAPNs: true, ProviderWebPush: true}
	r := NewResolver(ResolveDeps{Redis: h.rdb, Keys: h.keys, Config: h.cfg, Consumer: name, Presence: h.presence, Members: h.members,
		Convs: h.convs, Nicknames: fakeNames{"alice": "Alice"}, Devices: h.repo, Enabled: enabled, Log: log})
	runs := []func(context.Context) error{r.Run}
	for p, prov := range map[string]Provider{ProviderFCM: fcm, ProviderAPNs: apns, ProviderWebPush: NewWebPush(h.cfg.WebPush, nil)} {
		s := NewSender(SenderDeps{Redis: h.rdb, Keys: h.keys, Config: h.cfg, Name: p, Concurrency: 4, Provider: prov, Gone: h.repo,
			Metrics: h.metrics, Consumer: name, Log: log})
		runs = append(runs, s.Run)
	}
	for _, run := range runs {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("stage: %v", err)
			}
		}()
	}
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
		h.cancel = nil
	}
}

// webDevice registers a Web Push device of user whose endpoint is the
// receiver's path id.
func (h *harness) webDevice(user, id string) DeviceJSON {
	h.t.Helper()
	sub := h.web.subscribe(h.t, id)
	d, err := h.svc.Register(context.Background(), user, RegisterRequest{Provider: ProviderWebPush, Subscription: sub.json(), PlatformID: 5})
	if err != nil {
		h.t.Fatalf("register web device of %s: %v", user, err)
	}
	return d
}

func (h *harness) tokenDevice(user, provider, token string) DeviceJSON {
	h.t.Helper()
	d, err := h.svc.Register(context.Background(), user, RegisterRequest{Provider: provider, Token: token, PlatformID: 1})
	if err != nil {
		h.t.Fatalf("register %s device of %s: %v", provider, user, err)
	}
	return d
}

var seqs sync.Map

// save hands msgs to the enqueuer as the save stage does.
func (h *harness) save(msgs ...domain.Message) {
	h.t.Helper()
	for i := range msgs {
		m := &msgs[i]
		n, _ := seqs.LoadOrStore(m.ConversationID, new(int64))
		*n.(*int64)++
		m.Seq = *n.(*int64)
		if m.ServerMsgID == "" {
			m.ServerMsgID = fmt.Sprintf("%s#%d", m.ConversationID, m.Seq)
		}
		if m.SendAt == 0 {
			m.SendAt = time.Now().UnixMilli()
		}
	}
	// What the save stage's commit adds (streams.Commit.Appends).
	apps, err := h.enq.AfterSave(context.Background(), msgs, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := streams.AppendAll(context.Background(), h.rdb, apps); err != nil {
		h.t.Fatal(err)
	}
}

// drained waits until every stream is empty: each saved message was
// resolved and every job sent (or dead-lettered).
func (h *harness) drained() {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := int64(0)
		for _, k := range []string{h.keys.Saved, h.keys.Send(ProviderFCM), h.keys.Send(ProviderAPNs), h.keys.Send(ProviderWebPush)} {
			n += h.rdb.XLen(context.Background(), k).Val()
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("push streams not drained: %d entries left", n)
		}
		time.Sleep(20 * time.Millisecond) // polling Redis with a deadline, not synchronising
	}
}

func single(from, to, text string) domain.Message {
	return domain.Message{ConversationID: domain.SingleConversationID(from, to), SenderID: from, RecvID: to,
		SessionType: domain.SessionSingle, MsgType: domain.MsgText, Content: domain.Content{Text: text}, Status: domain.StatusNormal}
}

func groupMsg(from, group, text string, at ...string) domain.Message {
	return domain.Message{ConversationID: "sg_" + group, SenderID: from, GroupID: group, SessionType: domain.SessionGroup,
		MsgType: domain.MsgText, Content: domain.Content{Text: text}, AtUserIDs: at, Status: domain.StatusNormal}
}
