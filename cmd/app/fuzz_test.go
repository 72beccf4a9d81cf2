package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/common/ut"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store/storetest"
)

// The fuzz targets here drive the whole server — routes, validation, the
// accept step, the save stage, the store and pulls — on the embedded
// default (SQLite and the in-process Redis) and, when NEXO_TEST_MYSQL_DSN
// and NEXO_TEST_REDIS_ADDR are set, on MariaDB and Redis too. Requests go
// to the Hertz engine in-process (no sockets). Seed corpora:
// testdata/fuzz/<Target>/. make test runs each for 10 s, make fuzz longer.

// fuzzApp is one running server with users fza, fzb and fzc (fza and fzb
// share a single chat, all three a group), and the last seq each
// conversation issued.
type fuzzApp struct {
	name  string
	a     *App
	token string // fza's
	group string
	n     int
	last  map[string]int64
}

// fuzzApps starts the servers a fuzz target runs against (once per fuzz
// process; they stop when the target ends).
func fuzzApps(f *testing.F) []*fuzzApp {
	f.Helper()
	tweak := func(cfg *configs.Config) {
		// The abuse limits would refuse the fuzzer's rate, not its input.
		cfg.Limits = configs.Limits{}
		cfg.WS.RateLimit = 0
		cfg.Log.Access = false
		cfg.Log.Level = "error"
	}
	cfg := embeddedConfig(f)
	tweak(&cfg)
	apps := []*fuzzApp{startFuzzApp(f, "sqlite", cfg)}
	if os.Getenv(storetest.EnvMySQL) != "" && os.Getenv(storetest.EnvRedis) != "" {
		rc := realConfig(f)
		tweak(&rc)
		apps = append(apps, startFuzzApp(f, "mariadb", rc))
	}
	return apps
}

func startFuzzApp(f *testing.F, name string, cfg configs.Config) *fuzzApp {
	f.Helper()
	a, _, _, _ := runApp(f, cfg)
	fa := &fuzzApp{name: name, a: a, last: map[string]int64{}}
	for _, u := range []string{"fza", "fzb", "fzc"} {
		if code, body := fa.do("POST", "/user/register", `{"user_id":"`+u+`","nickname":"F","password":"plum-tart-9"}`, ""); code != 200 {
			f.Fatalf("%s: register %s: %d %s", name, u, code, body)
		}
	}
	code, body := fa.do("POST", "/auth/login", `{"user_id":"fza","password":"plum-tart-9","platform_id":5}`, "")
	var login struct {
		Data struct{ Token string } `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &login) != nil || login.Data.Token == "" {
		f.Fatalf("%s: login: %d %s", name, code, body)
	}
	fa.token = login.Data.Token
	code, body = fa.do("POST", "/group/create", `{"name":"fz","member_ids":["fzb","fzc"]}`, fa.token)
	var group struct {
		Data struct {
			GroupID string `json:"group_id"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &group) != nil || group.Data.GroupID == "" {
		f.Fatalf("%s: create group: %d %s", name, code, body)
	}
	fa.group = group.Data.GroupID
	return fa
}

// do performs a request in-process and returns the status and body.
func (fa *fuzzApp) do(method, target, body, token string) (int, []byte) {
	headers := []ut.Header{}
	if token != "" {
		headers = append(headers, ut.Header{Key: "Authorization", Value: "Bearer " + token})
	}
	var b *ut.Body
	if body != "" {
		headers = append(headers, ut.Header{Key: "Content-Type", Value: "application/json"})
		b = &ut.Body{Body: strings.NewReader(body), Len: len(body)}
	}
	res := ut.PerformRequest(fa.a.server.Hertz().Engine, method, target, b, headers...).Result()
	return res.StatusCode(), append([]byte(nil), res.Body()...)
}

// envelope is an answer of the HTTP API.
type envelope struct {
	ErrCode *int            `json:"err_code"`
	ErrMsg  *string         `json:"err_msg"`
	Data    json.RawMessage `json:"data"`
}

// checkAnswer fails unless an answer is the API's envelope, not a 5xx,
// and either a success (200, err_code 0) or a machine-readable refusal: a
// documented reason whose HTTP status and err_code match the error table,
// repeated in data.reason.
func checkAnswer(t *testing.T, what string, code int, body []byte) envelope {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.ErrCode == nil || env.ErrMsg == nil {
		t.Fatalf("%s: %d %q is not an envelope", what, code, body)
	}
	if code >= 500 {
		t.Fatalf("%s: server error %d %s", what, code, body)
	}
	if code == 200 {
		if *env.ErrCode != 0 {
			t.Fatalf("%s: 200 with err_code %d", what, *env.ErrCode)
		}
		return env
	}
	reason := wire.Reason(*env.ErrMsg)
	c := wire.Lookup(reason)
	if reason != wire.ReasonInternalError && c == wire.Lookup(wire.ReasonInternalError) {
		t.Fatalf("%s: %d with an undocumented reason %q", what, code, reason)
	}
	var d wire.ErrorData
	if c.HTTPStatus != code || c.ErrCode != *env.ErrCode || json.Unmarshal(env.Data, &d) != nil || d.Reason != reason {
		t.Fatalf("%s: %d %s does not match the error table (%d, %d)", what, code, body, c.HTTPStatus, c.ErrCode)
	}
	return env
}

// fuzzGetRoutes are the GET routes whose query strings FuzzQueryString
// feeds; the byte picks one.
var fuzzGetRoutes = []string{
	"/msg/newest_seq", "/msg/pull", "/group/list", "/group/info", "/group/members",
	"/conversation/list", "/user/info", "/user/presence",
}

// escapeQuery percent-encodes the bytes a request line cannot carry raw
// (controls, space, '#', non-ASCII); everything else — '%', '&', '=', '+',
// ';' — reaches the server's query parser as the fuzzer wrote it.
func escapeQuery(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c == '#' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// FuzzQueryString sends arbitrary query strings to the GET routes as a
// signed-in user: every answer is a success or a machine-readable refusal
// (checkAnswer), never a panic or a 5xx.
func FuzzQueryString(f *testing.F) {
	conv := domain.SingleConversationID("fza", "fzb")
	for _, s := range []struct {
		route uint8
		query string
	}{
		{0, "conversation_ids=" + conv}, {0, "conversation_ids=,,,"}, {0, "conversation_ids=" + strings.Repeat("x,", 300)},
		{1, "conversation_id=" + conv + "&begin_seq=1&end_seq=9223372036854775807&limit=-1"},
		{1, "conversation_id=" + conv + "&begin_seq=-5&end_seq=abc"}, {1, "conversation_id=%zz&limit=99999999999999999999"},
		{2, "cursor=&limit=0"}, {2, "cursor=%00%ff&limit=1000"}, {3, "group_id="}, {3, "group_id=a%20b&group_id=c"},
		{4, "group_id=x&cursor=-1&limit=5"}, {5, "cursor=9999999999999&limit=1"}, {6, "user_id=fzb"}, {6, "user_id=FZB;x"},
		{7, "user_ids=fzb,fza,,fzb"}, {7, "user_ids=" + strings.Repeat("u", 70)},
	} {
		f.Add(s.route, s.query)
	}
	apps := fuzzApps(f)
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		path := fuzzGetRoutes[int(route)%len(fuzzGetRoutes)]
		target := path + "?" + escapeQuery(strings.ReplaceAll(query, "{group}", apps[0].group))
		for _, fa := range apps {
			code, body := fa.do("GET", target, "", fa.token)
			checkAnswer(t, fa.name+" GET "+target, code, body)
		}
	})
}

// fuzzMsgTypes are the sendable msg_types; a selector byte of 240 or more
// sends the byte itself as msg_type instead (refused).
var fuzzMsgTypes = []int{101, 102, 103, 104, 105, 106, 110}

// refField is the content field a msg_type's reference goes in.
func refField(msgType int) string {
	switch msgType {
	case 102:
		return "image"
	case 103:
		return "audio"
	case 104:
		return "video"
	case 105:
		return "file"
	}
	return "image"
}

// sentContent is a message's content as an independent parser
// (encoding/json) reads the request that carried it.
type sentContent struct {
	Text   string          `json:"text"`
	Image  string          `json:"image"`
	Video  string          `json:"video"`
	Audio  string          `json:"audio"`
	File   string          `json:"file"`
	Custom json.RawMessage `json:"custom"`
}

// FuzzMessageContent sends arbitrary content (text, a reference, raw
// custom JSON) in a single or group chat through the whole pipeline — send
// (accept), the save stage, the store, a pull: the send is either refused
// with a machine-readable error and takes no seq, or it is saved and
// pulled back identical (text and references byte for byte, custom as the
// same JSON value with numbers as written) at the next seq; never a panic
// or a 5xx.
func FuzzMessageContent(f *testing.F) {
	for _, s := range []struct {
		group  bool
		sel    uint8
		text   string
		ref    string
		custom string
	}{
		{false, 0, "hello", "", ""}, {true, 0, "héllo 👋 <b>&amp;</b> \u2028", "", ""},
		{false, 6, "", "", `{"k":[1,2.50,-0,1e400,"\u00e9",null,true,{"":{}}]}`},
		{false, 6, "", "", `{"a":"\ud800"}`}, {false, 6, "", "", `{"a":"\ud83d\ude00"}`},
		{false, 6, "", "", strings.Repeat("[", 31) + strings.Repeat("]", 31)},
		{true, 6, "", "", strings.Repeat("[", 32) + strings.Repeat("]", 32)},
		{false, 6, "", "", `{"a":1,"a":2}`}, {false, 6, "x", "", `"just a string"`}, {false, 6, "", "", `1 2`},
		{false, 1, "", "https://img.example/a.png", ""}, {false, 4, "", strings.Repeat("f", 513), ""},
		{false, 0, "\x00\x01 nul and controls \x7f", "", ""}, {false, 0, "bad utf8 \xff\xfe", "", ""},
		{false, 0, strings.Repeat("x", 65536), "", ""}, {false, 250, "x", "", ""}, {true, 0, "", "", ""},
	} {
		f.Add(s.group, s.sel, s.text, s.ref, []byte(s.custom))
	}
	apps := fuzzApps(f)
	f.Fuzz(func(t *testing.T, group bool, sel uint8, text, ref string, custom []byte) {
		msgType := int(sel)
		if sel < 240 {
			msgType = fuzzMsgTypes[int(sel)%len(fuzzMsgTypes)]
		}
		for _, fa := range apps {
			fa.roundTrip(t, group, msgType, text, ref, custom)
		}
	})
}

func (fa *fuzzApp) roundTrip(t *testing.T, group bool, msgType int, text, ref string, custom []byte) {
	fa.n++
	req := map[string]any{"client_msg_id": fmt.Sprintf("fz-%d", fa.n), "msg_type": msgType}
	conv := domain.SingleConversationID("fza", "fzb")
	if group {
		req["session_type"], req["group_id"] = 3, fa.group
		conv = domain.GroupConversationID(fa.group)
	} else {
		req["session_type"], req["recv_id"] = 1, "fzb"
	}
	content := map[string]any{}
	if text != "" {
		content["text"] = text
	}
	if ref != "" {
		content[refField(msgType)] = ref
	}
	req["content"] = content
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(custom) > 0 {
		// Raw bytes as the custom value, whatever they are: the server's
		// decoder must cope (they may even end the object early).
		cj, _ := json.Marshal(content)
		with := append(cj[:len(cj)-1:len(cj)-1], []byte(map[bool]string{true: ",", false: ""}[len(content) > 0]+`"custom":`)...)
		with = append(append(with, custom...), '}')
		body = bytes.Replace(body, cj, with, 1)
	}
	what := fmt.Sprintf("%s send %s", fa.name, body)
	if len(what) > 600 {
		what = what[:600] + "..."
	}
	code, answer := fa.do("POST", "/msg/send", string(body), fa.token)
	env := checkAnswer(t, what, code, answer)
	if code != 200 {
		return // refused: the next accepted message shows no seq was taken
	}
	var ack struct {
		Seq            int64  `json:"seq"`
		ConversationID string `json:"conversation_id"`
	}
	if err := json.Unmarshal(env.Data, &ack); err != nil || ack.Seq <= 0 || ack.ConversationID != conv {
		t.Fatalf("%s: ACK %s", what, env.Data)
	}
	if last := fa.last[conv]; last > 0 && ack.Seq != last+1 {
		t.Fatalf("%s: seq %d after %d: a refused send took a seq, or seqs were skipped", what, ack.Seq, last)
	}
	fa.last[conv] = ack.Seq
	var sent struct {
		Content sentContent `json:"content"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatalf("%s: accepted, but encoding/json cannot read the request: %v", what, err)
	}
	got := fa.pullOne(t, what, conv, ack.Seq)
	if got.Status != "normal" || got.Content == nil {
		t.Fatalf("%s: pulled seq %d as %+v, want the saved message", what, ack.Seq, got)
	}
	g, s := got.Content, sent.Content
	if g.Text != s.Text || g.Image != s.Image || g.Video != s.Video || g.Audio != s.Audio || g.File != s.File {
		t.Fatalf("%s: pulled content %+v, sent %+v", what, *g, s)
	}
	if !sameJSON(g.Custom, s.Custom) {
		t.Fatalf("%s: pulled custom %s, sent %s", what, g.Custom, s.Custom)
	}
}

// pulledMessage is a message of a pull answer.
type pulledMessage struct {
	Seq     int64        `json:"seq"`
	Status  string       `json:"status"`
	Content *sentContent `json:"content"`
}

// pullOne pulls seq until it is saved (two-phase saves after the ACK).
func (fa *fuzzApp) pullOne(t *testing.T, what, conv string, seq int64) pulledMessage {
	t.Helper()
	target := fmt.Sprintf("/msg/pull?conversation_id=%s&begin_seq=%d&end_seq=%d", conv, seq, seq)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := fa.do("GET", target, "", fa.token)
		env := checkAnswer(t, what+" then pull", code, body)
		if code != 200 {
			t.Fatalf("%s: pull refused: %s", what, body)
		}
		var res struct {
			Messages []pulledMessage `json:"messages"`
		}
		if err := json.Unmarshal(env.Data, &res); err != nil {
			t.Fatalf("%s: pull answer %s: %v", what, env.Data, err)
		}
		for _, m := range res.Messages {
			if m.Seq == seq {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: seq %d not saved within 10 s (last pull %s)", what, seq, env.Data)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sameJSON reports whether a and b are the same JSON value (numbers
// compared as written); both empty is the same.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	decode := func(raw []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}
