package media_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/media"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, x%h, color.RGBA{200, 10, 10, 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func upload(e *env, owner, name, ct string, data []byte) (media.ObjectJSON, error) {
	return e.svc.Upload(context.Background(), owner, media.UploadRequest{Name: name, ContentType: ct, Size: int64(len(data)), Body: bytes.NewReader(data)})
}

func isKind(err, kind error) bool { return errors.Is(err, kind) }

func TestUploadAndURL(t *testing.T) {
	backends(t, nil, func(t *testing.T, e *env) {
		ctx := context.Background()
		data := pngBytes(t, 800, 400)
		o, err := upload(e, "alice", "photo.png", "image/png", data)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if o.ContentType != "image/png" || o.Width != 800 || o.Height != 400 || o.Size != int64(len(data)) ||
			o.SHA256 != hex.EncodeToString(sum[:]) || !o.HasThumbnail || o.Name != "photo.png" {
			t.Fatalf("object = %+v", o)
		}
		u, err := e.svc.URL(ctx, "alice", o.ObjectID, "original")
		if err != nil {
			t.Fatal(err)
		}
		if want := e.clock.Now().Add(15 * time.Minute).UnixMilli(); u.ExpiresAt != want {
			t.Fatalf("expires_at %d, want %d", u.ExpiresAt, want)
		}
		status, body, disp := e.fetch(t, u.URL)
		if status != 200 || !bytes.Equal(body, data) || !strings.HasPrefix(disp, "attachment") {
			t.Fatalf("GET original: %d, %d bytes, disposition %q", status, len(body), disp)
		}
		th, err := e.svc.URL(ctx, "alice", o.ObjectID, "thumbnail")
		if err != nil {
			t.Fatal(err)
		}
		status, body, _ = e.fetch(t, th.URL)
		if status != 200 {
			t.Fatalf("GET thumbnail: %d", status)
		}
		img, err := png.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 160 {
			t.Fatalf("thumbnail %v, want 320×160", b)
		}
		if _, err := e.svc.URL(ctx, "alice", o.ObjectID, "poster"); !isKind(err, domain.ErrInvalidArgument) {
			t.Fatalf("variant poster: %v", err)
		}
		// The thumbnail URL is for the thumbnail only: its signature does
		// not open the original.
		if e.local != nil {
			tampered := strings.Replace(th.URL, "key=t%2F", "key=o%2F", 1)
			if status, _, _ := e.fetch(t, tampered); status != 403 {
				t.Fatalf("thumbnail URL moved to the original: %d", status)
			}
		}
	})
}

func TestHostileInputs(t *testing.T) {
	backends(t, func(c *configs.Objects) { c.UserQuotaBytes = 64 << 10 }, func(t *testing.T, e *env) {
		svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
		cases := []struct {
			name, file, ct string
			data           []byte
			want           error
		}{
			{"text as png", "a.png", "image/png", []byte(strings.Repeat("just some text\n", 20)), domain.ErrObjectTypeMismatch},
			{"20000x20000 png", "big.png", "image/png", hugePNG(t, 20000, 20000), domain.ErrImageTooLarge},
			{"svg with script", "x.svg", "image/svg+xml", svg, domain.ErrObjectTypeRefused},
			{"svg as octet-stream", "x.bin", "application/octet-stream", svg, domain.ErrObjectTypeRefused},
			{"zip bomb named jpg", "cat.jpg", "application/octet-stream", zipBomb(t), domain.ErrObjectTypeMismatch},
			{"dot dot slash", "../../etc/passwd", "text/plain", []byte("hello"), domain.ErrObjectNameInvalid},
			{"control chars", "a\x00b\x1b.txt", "text/plain", []byte("hello"), domain.ErrObjectNameInvalid},
			{"bidi override", "gpj.\u202eexe", "text/plain", []byte("hello"), domain.ErrObjectNameInvalid},
			{"past quota", "big.bin", "", bytes.Repeat([]byte{7}, 65<<10), domain.ErrQuotaExceeded},
		}
		for _, c := range cases {
			if len(c.data) > 16<<10 && c.want == domain.ErrImageTooLarge {
				t.Fatalf("%s: the bomb PNG is %d bytes, not a few KiB", c.name, len(c.data))
			}
			_, err := upload(e, "mallory", c.file, c.ct, c.data)
			if !isKind(err, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			}
		}
		if keys := e.stored(t); len(keys) != 0 {
			t.Fatalf("refused uploads left %v behind", keys)
		}
		if used, _ := e.repo.UsedBytes(context.Background(), "mallory"); used != 0 {
			t.Fatalf("refused uploads count %d bytes", used)
		}
		// The multipart path refuses the same: a text file declared and
		// assembled as a PNG is deleted with its upload.
		up, err := e.svc.Initiate(context.Background(), "mallory", media.InitiateRequest{Name: "a.png", Size: 300, ContentType: "image/png"})
		if err != nil {
			t.Fatal(err)
		}
		text := []byte(strings.Repeat("x", 300))
		etag := e.putPart(t, up.Parts[0].URL, 1, text)
		_, err = e.svc.Complete(context.Background(), "mallory", media.CompleteRequest{UploadID: up.UploadID, Parts: []media.Part{{Number: 1, ETag: etag}}})
		if !isKind(err, domain.ErrObjectTypeMismatch) {
			t.Fatalf("multipart text as png: %v", err)
		}
		if keys := e.stored(t); len(keys) != 0 {
			t.Fatalf("refused multipart upload left %v behind", keys)
		}
		if _, err := e.svc.Initiate(context.Background(), "mallory", media.InitiateRequest{Name: "p.svg", Size: 300}); !isKind(err, domain.ErrObjectTypeRefused) {
			t.Fatalf("initiate svg: %v", err)
		}
		if _, err := e.svc.Initiate(context.Background(), "mallory", media.InitiateRequest{Name: "v.mp4", Size: 3 << 30}); !isKind(err, domain.ErrObjectTooLarge) {
			t.Fatalf("initiate 3 GiB: %v", err)
		}
	})
}

// hugePNG is a valid PNG header declaring w×h pixels followed by a tiny
// compressed stream: a decompression bomb of a few KiB.
func hugePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		buf.WriteString(typ)
		buf.Write(data)
		_ = binary.Write(&buf, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 0 // 8-bit greyscale
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw, _ := flate.NewWriter(&z, flate.BestCompression)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	chunk("IDAT", append([]byte{0x78, 0x9c}, z.Bytes()...))
	chunk("IEND", nil)
	return buf.Bytes()
}

// zipBomb is a small zip whose one entry expands to 64 MiB of zeros.
func zipBomb(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("zeros.bin")
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for range 64 {
		_, _ = w.Write(zero)
	}
	_ = zw.Close()
	return buf.Bytes()
}

func TestMultipartResume100MiB(t *testing.T) {
	backends(t, nil, func(t *testing.T, e *env) {
		ctx := context.Background()
		const size = 100 << 20
		up, err := e.svc.Initiate(ctx, "alice", media.InitiateRequest{Name: "movie.bin", Size: size})
		if err != nil {
			t.Fatal(err)
		}
		if up.PartSize != 8<<20 || up.PartCount != 13 || len(up.Parts) != 13 {
			t.Fatalf("initiate = part_size %d, %d parts, %d urls", up.PartSize, up.PartCount, len(up.Parts))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		data := make([]byte, size)
		for i := 0; i < size; i += 8 {
			binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
		}
		part := func(n int) []byte {
			lo := int64(n-1) * up.PartSize
			return data[lo:min(lo+up.PartSize, size)]
		}
		// Half the parts, then the connection drops: the client forgets
		// everything but the upload_id.
		for _, p := range up.Parts[:6] {
			e.putPart(t, p.URL, p.Number, part(p.Number))
		}
		resumed, err := e.svc.Parts(ctx, "alice", up.UploadID)
		if err != nil {
			t.Fatal(err)
		}
		if len(resumed.Uploaded) != 6 || len(resumed.Parts) != 7 || resumed.Parts[0].Number != 7 {
			t.Fatalf("resume: %d uploaded, %d to go (first %d)", len(resumed.Uploaded), len(resumed.Parts), resumed.Parts[0].Number)
		}
		if _, err := e.svc.Parts(ctx, "mallory", up.UploadID); !isKind(err, domain.ErrUploadNotFound) {
			t.Fatalf("someone else's upload: %v", err)
		}
		for _, p := range resumed.Parts {
			e.putPart(t, p.URL, p.Number, part(p.Number))
		}
		all, err := e.svc.Parts(ctx, "alice", up.UploadID)
		if err != nil {
			t.Fatal(err)
		}
		// A completion with a wrong etag is refused and changes nothing.
		bad := append([]media.Part(nil), all.Uploaded...)
		bad[3].ETag = "0123"
		if _, err := e.svc.Complete(ctx, "alice", media.CompleteRequest{UploadID: up.UploadID, Parts: bad}); !isKind(err, domain.ErrPartsMismatch) {
			t.Fatalf("wrong etag: %v", err)
		}
		o, err := e.svc.Complete(ctx, "alice", media.CompleteRequest{UploadID: up.UploadID, Parts: all.Uploaded})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if o.SHA256 != hex.EncodeToString(sum[:]) || o.Size != size {
			t.Fatalf("completed %+v", o)
		}
		u, err := e.svc.URL(ctx, "alice", o.ObjectID, "original")
		if err != nil {
			t.Fatal(err)
		}
		status, body, _ := e.fetch(t, u.URL)
		got := sha256.Sum256(body)
		if status != 200 || got != sum {
			t.Fatalf("download: %d, %d bytes, sha256 match %v", status, len(body), got == sum)
		}
		if _, err := e.svc.Complete(ctx, "alice", media.CompleteRequest{UploadID: up.UploadID, Parts: all.Uploaded}); !isKind(err, domain.ErrUploadNotFound) {
			t.Fatalf("second completion: %v", err)
		}
	})
}

func TestAccessMatrix(t *testing.T) {
	backends(t, nil, func(t *testing.T, e *env) {
		ctx := context.Background()
		o, err := upload(e, "owner", "cat.png", "", pngBytes(t, 40, 30))
		if err != nil {
			t.Fatal(err)
		}
		const conv = "sg_g1"
		if _, err := e.svc.AfterSave(ctx, []domain.Message{{ConversationID: conv, Seq: 5, ServerMsgID: "m5", MsgType: domain.MsgPicture,
			Content: domain.Content{Image: `{"object_id":"` + o.ObjectID + `"}`}}}, nil); err != nil {
			t.Fatal(err)
		}
		e.vis.set("member", conv, 5, "normal")
		e.vis.set("late", conv, 5, "unavailable") // joined after seq 5
		e.vis.set("left", conv, 5, "unavailable") // left before seq 5
		cases := []struct {
			user string
			ok   bool
		}{{"owner", true}, {"member", true}, {"late", false}, {"left", false}, {"stranger", false}}
		for _, c := range cases {
			_, err := e.svc.URL(ctx, c.user, o.ObjectID, "original")
			if c.ok != (err == nil) || !c.ok && !isKind(err, domain.ErrObjectAccessDenied) {
				t.Errorf("%s: %v, want allowed=%v", c.user, err, c.ok)
			}
		}
		// Recalled: the member no longer sees it; the owner still does.
		e.vis.set("member", conv, 5, "revoked")
		if _, err := e.svc.URL(ctx, "member", o.ObjectID, "original"); !isKind(err, domain.ErrObjectAccessDenied) {
			t.Errorf("recalled: %v", err)
		}
		// The same object forwarded in another message stays readable
		// there: recalling one message breaks no other.
		if _, err := e.svc.AfterSave(ctx, []domain.Message{{ConversationID: conv, Seq: 9, ServerMsgID: "m9", MsgType: domain.MsgPicture,
			Content: domain.Content{Image: `{"object_id":"` + o.ObjectID + `"}`}}}, nil); err != nil {
			t.Fatal(err)
		}
		e.vis.set("member", conv, 9, "normal")
		u, err := e.svc.URL(ctx, "member", o.ObjectID, "original")
		if err != nil {
			t.Fatalf("forwarded copy: %v", err)
		}
		// Tampered signature.
		param := "X-Amz-Signature="
		if e.local != nil {
			param = "sig="
		}
		i := strings.LastIndex(u.URL, param) + len(param)
		tampered := u.URL[:i] + flip(u.URL[i]) + u.URL[i+1:]
		if status, _, _ := e.fetch(t, tampered); status != 403 {
			t.Errorf("tampered signature: %d", status)
		}
		// Expired URL.
		if e.local != nil {
			e.clock.Add(16 * time.Minute)
			if status, body, _ := e.fetch(t, u.URL); status != 403 || string(body) != "expired" {
				t.Errorf("expired URL: %d %s", status, body)
			}
			return
		}
		short := newEnvSame(t, e, func(c *configs.Objects) { c.URLTTL = time.Second })
		su, err := short.svc.URL(ctx, "owner", o.ObjectID, "original")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, _, _ := e.fetch(t, su.URL)
			if status == 403 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("S3 URL still %d 10 s after its 1 s expiry", status)
			}
			time.Sleep(200 * time.Millisecond) // polling the server's clock, not synchronising goroutines
		}
	})
}

// flip changes one signature character into another valid one (hex for
// S3's, base64url for Nexo's), so the signature is well-formed but wrong.
func flip(b byte) string {
	if b == '0' {
		return "1"
	}
	return "0"
}

// newEnvSame is e's backend and database with another configuration.
func newEnvSame(t *testing.T, e *env, mod func(*configs.Objects)) *env {
	cfg := e.cfg
	mod(&cfg)
	return &env{name: e.name, st: e.st, repo: e.repo, clock: e.clock, vis: e.vis, cfg: cfg, s3: e.s3, s3cfg: e.s3cfg,
		svc: media.NewService(media.Deps{Config: cfg, Repo: e.repo, Storage: e.st, Messages: e.vis})}
}

func TestAttachRules(t *testing.T) {
	backends(t, nil, func(t *testing.T, e *env) {
		ctx := context.Background()
		img, err := upload(e, "alice", "cat.png", "", pngBytes(t, 10, 10))
		if err != nil {
			t.Fatal(err)
		}
		txt, err := upload(e, "alice", "notes.txt", "", []byte("hello notes"))
		if err != nil {
			t.Fatal(err)
		}
		const conv = "si_alice_bob"
		if _, err := e.svc.Attach(ctx, "alice", conv, domain.MsgPicture, txt.ObjectID); !isKind(err, domain.ErrObjectTypeMismatch) {
			t.Fatalf("102 with a text file: %v", err)
		}
		meta, err := e.svc.Attach(ctx, "alice", conv, domain.MsgPicture, img.ObjectID)
		if err != nil || meta.Width != 10 || meta.ContentType != "image/png" || !meta.HasThumbnail {
			t.Fatalf("102 with an image: %+v %v", meta, err)
		}
		if _, err := e.svc.Attach(ctx, "alice", conv, domain.MsgFile, txt.ObjectID); err != nil {
			t.Fatalf("105 with a text file: %v", err)
		}
		if _, err := e.svc.Attach(ctx, "bob", conv, domain.MsgPicture, img.ObjectID); !isKind(err, domain.ErrObjectAccessDenied) {
			t.Fatalf("bob sends alice's unsent object: %v", err)
		}
		_, _ = e.svc.AfterSave(ctx, []domain.Message{{ConversationID: conv, Seq: 1, MsgType: domain.MsgPicture,
			Content: domain.Content{Image: `{"object_id":"` + img.ObjectID + `"}`}}}, nil)
		if _, err := e.svc.Attach(ctx, "bob", conv, domain.MsgPicture, img.ObjectID); err != nil {
			t.Fatalf("bob forwards it within the conversation: %v", err)
		}
		if _, err := e.svc.Attach(ctx, "bob", "si_bob_carol", domain.MsgPicture, img.ObjectID); !isKind(err, domain.ErrObjectAccessDenied) {
			t.Fatalf("bob takes it to another conversation: %v", err)
		}
		if _, err := e.svc.Attach(ctx, "alice", conv, domain.MsgPicture, "o"+strings.Repeat("0", 32)); !isKind(err, domain.ErrObjectNotFound) {
			t.Fatalf("unknown object: %v", err)
		}
		up, err := e.svc.Initiate(ctx, "alice", media.InitiateRequest{Name: "v.bin", Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Attach(ctx, "alice", conv, domain.MsgFile, up.ObjectID); !isKind(err, domain.ErrObjectIncomplete) {
			t.Fatalf("incomplete: %v", err)
		}
	})
}

func TestCleaner(t *testing.T) {
	backends(t, nil, func(t *testing.T, e *env) {
		ctx := context.Background()
		rdb, prefix := storetest.Redis(t)
		keys := store.Keys{Prefix: prefix}
		sent, _ := upload(e, "alice", "a.png", "", pngBytes(t, 10, 10))
		unsent, _ := upload(e, "alice", "b.png", "", pngBytes(t, 10, 10))
		recalled, _ := upload(e, "alice", "c.png", "", pngBytes(t, 10, 10))
		up, err := e.svc.Initiate(ctx, "alice", media.InitiateRequest{Name: "c.bin", Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		e.putPart(t, up.Parts[0].URL, 1, []byte("0123456789"))
		// Saved messages carry sent (twice: the second one is recalled,
		// the first stays) and recalled (recalled).
		var msgs []domain.Message
		for i, id := range []string{sent.ObjectID, sent.ObjectID, recalled.ObjectID} {
			msgs = append(msgs, domain.Message{ServerMsgID: fmt.Sprint("m", i+1), ClientMsgID: fmt.Sprint("c", i+1), ConversationID: "si_a_b",
				Seq: int64(i + 1), SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgPicture,
				Content: domain.Content{Image: `{"object_id":"` + id + `"}`}, Status: domain.StatusNormal, SendAt: 1})
		}
		if _, err := store.NewMessageRepo(e.db).SaveBatch(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.AfterSave(ctx, msgs, nil); err != nil {
			t.Fatal(err)
		}
		for _, seq := range []int64{2, 3} {
			if _, err := store.NewRevokeRepo(e.db).Revoke(ctx, "si_a_b", seq); err != nil {
				t.Fatal(err)
			}
		}
		// Every thumbnail made, so the stage does not race the pass.
		for _, id := range []string{sent.ObjectID, unsent.ObjectID, recalled.ObjectID} {
			if _, err := e.svc.URL(ctx, "alice", id, "thumbnail"); err != nil {
				t.Fatal(err)
			}
		}
		lease := store.NewLease(rdb, keys, "objects-cleaner")
		a := media.NewCleaner(e.svc, lease, "a")
		b := media.NewCleaner(e.svc, lease, "b")
		if n, err := a.Pass(ctx); err != nil || n != 0 {
			t.Fatalf("pass before orphan_ttl: %d %v", n, err)
		}
		e.clock.Add(2 * time.Hour)
		if n, err := b.Pass(ctx); err != nil || n != 0 {
			t.Fatalf("b ran while a holds the lease: %d %v", n, err)
		}
		if err := lease.Release(ctx, "a"); err != nil { // a stops
			t.Fatal(err)
		}
		if n, err := b.Pass(ctx); err != nil || n != 3 {
			t.Fatalf("pass after orphan_ttl deleted %d, want 3 (%v)", n, err)
		}
		for _, id := range []string{unsent.ObjectID, recalled.ObjectID, "o" + up.UploadID[1:]} {
			if _, err := e.repo.Get(ctx, id); !isKind(err, domain.ErrObjectNotFound) {
				t.Fatalf("%s kept: %v", id, err)
			}
		}
		if _, err := e.svc.URL(ctx, "alice", sent.ObjectID, "original"); err != nil {
			t.Fatalf("an object a readable message carries: %v", err)
		}
		for _, k := range e.stored(t) {
			if !strings.HasSuffix(k, sent.ObjectID[1:]) {
				t.Errorf("left behind: %s", k)
			}
		}
		// An old unsent object being sent now is safe from the next pass
		// until its message is saved: attaching restarts its clock.
		late, _ := upload(e, "alice", "d.png", "", pngBytes(t, 10, 10))
		e.clock.Add(2 * time.Hour)
		if _, err := e.svc.Attach(ctx, "alice", "si_a_b", domain.MsgPicture, late.ObjectID); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Pass(ctx); err != nil || n != 0 {
			t.Fatalf("pass right after the attach deleted %d (%v)", n, err)
		}
	})
}

func TestAbortAndInfo(t *testing.T) {
	backends(t, nil, func(t *testing.T, e *env) {
		ctx := context.Background()
		up, err := e.svc.Initiate(ctx, "alice", media.InitiateRequest{Name: "v.bin", Size: 20 << 20})
		if err != nil {
			t.Fatal(err)
		}
		e.putPart(t, up.Parts[0].URL, 1, make([]byte, 8<<20))
		if err := e.svc.Abort(ctx, "bob", up.UploadID); !isKind(err, domain.ErrUploadNotFound) {
			t.Fatalf("abort by another user: %v", err)
		}
		if err := e.svc.Abort(ctx, "alice", up.UploadID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Parts(ctx, "alice", up.UploadID); !isKind(err, domain.ErrUploadNotFound) {
			t.Fatalf("parts after abort: %v", err)
		}
		if keys := e.stored(t); len(keys) != 0 {
			t.Fatalf("abort left %v", keys)
		}
		if used, _ := e.repo.UsedBytes(ctx, "alice"); used != 0 {
			t.Fatalf("abort left %d bytes in the quota", used)
		}
		if _, err := e.svc.Parts(ctx, "alice", "not-an-upload"); !isKind(err, domain.ErrInvalidArgument) {
			t.Fatalf("malformed upload_id: %v", err)
		}
		o, err := upload(e, "alice", "a.txt", "", []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.svc.Get(ctx, "alice", o.ObjectID)
		if err != nil || info != o {
			t.Fatalf("info = %+v %v, want %+v", info, err, o)
		}
		if _, err := e.svc.Get(ctx, "bob", o.ObjectID); !isKind(err, domain.ErrObjectAccessDenied) {
			t.Fatalf("info for a stranger: %v", err)
		}
		if _, err := e.svc.Get(ctx, "bob", "o"+strings.Repeat("f", 32)); !isKind(err, domain.ErrObjectNotFound) {
			t.Fatalf("info of an unknown object: %v", err)
		}
		if _, err := e.svc.URL(ctx, "alice", "../../etc", "original"); !isKind(err, domain.ErrInvalidArgument) {
			t.Fatalf("malformed object_id: %v", err)
		}
	})
}

// TestCleanerAfterRetentionAndErasure (MariaDB, local backend): a picture
// whose only message retention deletes is gone — row, bytes, thumbnail —
// after the next pass; one also carried by an unexpired message stays;
// erasing a user with retention.erase_deleted_users takes the objects of
// their messages, without it they stay; an avatar is never collected.
func TestCleanerAfterRetentionAndErasure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "local", storetest.MySQL(t), nil)
	rdb, prefix := storetest.Redis(t)
	users, priv := store.NewUserRepo(e.db), store.NewPrivacyRepo(e.db)
	for _, u := range []string{"ann", "ben", "cat"} {
		if _, err := users.Create(ctx, domain.User{ID: u, Nickname: u}); err != nil {
			t.Fatal(err)
		}
	}
	obj := map[string]media.ObjectJSON{}
	for _, o := range []struct{ name, owner string }{{"expired", "ann"}, {"forwarded", "ann"}, {"erased", "ben"}, {"kept", "cat"}} {
		var err error
		if obj[o.name], err = upload(e, o.owner, o.name+".png", "image/png", pngBytes(t, 20, 20)); err != nil {
			t.Fatal(err)
		}
		// Thumbnail made now, so the stage does not race the pass.
		if _, err := e.svc.URL(ctx, o.owner, obj[o.name].ObjectID, "thumbnail"); err != nil {
			t.Fatal(err)
		}
	}
	avatar, err := e.svc.Upload(ctx, "ann", media.UploadRequest{Name: "me.png", Purpose: domain.PurposeAvatar, Size: int64(len(pngBytes(t, 8, 8))),
		Body: bytes.NewReader(pngBytes(t, 8, 8))})
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now().UnixMilli()
	old, fresh := now-int64(48*time.Hour/time.Millisecond), now
	carried := []struct {
		conv, from, to, obj string
		at                  int64
	}{
		{"si_ann_cat", "ann", "cat", "expired", old},
		{"si_ann_cat", "ann", "cat", "forwarded", old},
		{"si_ann_ben", "ann", "ben", "forwarded", fresh}, // sent again, not expired
		{"si_ben_cat", "ben", "cat", "erased", fresh},
		{"si_ben_cat", "cat", "ben", "kept", fresh},
	}
	var msgs []domain.Message
	for i, c := range carried {
		msgs = append(msgs, domain.Message{ServerMsgID: fmt.Sprint("rm", i), ClientMsgID: fmt.Sprint("rc", i), ConversationID: c.conv,
			Seq: int64(i + 1), SenderID: c.from, RecvID: c.to, SessionType: domain.SessionSingle, MsgType: domain.MsgPicture,
			Content: domain.Content{Image: `{"object_id":"` + obj[c.obj].ObjectID + `"}`}, Status: domain.StatusNormal, SendAt: c.at})
	}
	if _, err := store.NewMessageRepo(e.db).SaveBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AfterSave(ctx, msgs, nil); err != nil {
		t.Fatal(err)
	}
	cleaner := media.NewCleaner(e.svc, store.NewLease(rdb, store.Keys{Prefix: prefix}, "objects-cleaner"), "a")
	e.clock.Add(2 * time.Hour) // every object past orphan_ttl
	if n, err := cleaner.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("a pass while every object is carried deleted %d (%v)", n, err)
	}
	// Retention of one day in si_ann_cat, then ben erased with his messages.
	if n, err := priv.DeleteExpired(ctx, "si_ann_cat", nil, now-int64(24*time.Hour/time.Millisecond), 500); err != nil || n != 2 {
		t.Fatalf("expired %d (%v)", n, err)
	}
	if err := priv.EraseUser(ctx, "ben", store.EraseOptions{Messages: true}); err != nil {
		t.Fatal(err)
	}
	// cat is erased without her messages (erase_deleted_users off).
	if err := priv.EraseUser(ctx, "cat", store.EraseOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := cleaner.Pass(ctx); err != nil || n != 2 {
		t.Fatalf("the pass after expiry and erasure deleted %d, want 2 (%v)", n, err)
	}
	for _, name := range []string{"expired", "erased"} {
		if _, err := e.repo.Get(ctx, obj[name].ObjectID); !isKind(err, domain.ErrObjectNotFound) {
			t.Errorf("%s object kept: %v", name, err)
		}
	}
	for _, id := range []string{obj["forwarded"].ObjectID, obj["kept"].ObjectID, avatar.ObjectID} {
		if _, err := e.repo.Get(ctx, id); err != nil {
			t.Errorf("%s deleted: %v", id, err)
		}
	}
	left := strings.Join(e.stored(t), " ")
	for _, name := range []string{"expired", "erased"} {
		if hex := obj[name].ObjectID[1:]; strings.Contains(left, hex) {
			t.Errorf("bytes or thumbnail of the %s object left: %s", name, left)
		}
	}
	for _, id := range []string{obj["forwarded"].ObjectID, obj["kept"].ObjectID, avatar.ObjectID} {
		if !strings.Contains(left, filepath.Join("o", id[1:])) {
			t.Errorf("bytes of %s gone: %s", id, left)
		}
	}
}

// TestEraseOwner: a deleted account's own objects that no message carries
// (its avatar, an upload never sent) go with their bytes; what a message
// carries and other users' objects stay.
func TestEraseOwner(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "local", storetest.MySQL(t), nil)
	avatarPNG := pngBytes(t, 8, 8)
	avatar, err := e.svc.Upload(ctx, "ann", media.UploadRequest{Name: "me.png", Purpose: domain.PurposeAvatar,
		Size: int64(len(avatarPNG)), Body: bytes.NewReader(avatarPNG)})
	if err != nil {
		t.Fatal(err)
	}
	unsent, err := upload(e, "ann", "draft.png", "image/png", pngBytes(t, 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := upload(e, "ann", "sent.png", "image/png", pngBytes(t, 12, 12))
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.svc.Upload(ctx, "ben", media.UploadRequest{Name: "ben.png", Purpose: domain.PurposeAvatar,
		Size: int64(len(avatarPNG)), Body: bytes.NewReader(avatarPNG)})
	if err != nil {
		t.Fatal(err)
	}
	msg := domain.Message{ServerMsgID: "eo1", ClientMsgID: "eo1", ConversationID: "si_ann_ben", Seq: 1, SenderID: "ann", RecvID: "ben",
		SessionType: domain.SessionSingle, MsgType: domain.MsgPicture, Content: domain.Content{Image: `{"object_id":"` + sent.ObjectID + `"}`},
		Status: domain.StatusNormal, SendAt: e.clock.Now().UnixMilli()}
	if _, err := store.NewMessageRepo(e.db).SaveBatch(ctx, []domain.Message{msg}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AfterSave(ctx, []domain.Message{msg}, nil); err != nil {
		t.Fatal(err)
	}
	n, err := e.svc.EraseOwner(ctx, "ann")
	if err != nil || n != 2 {
		t.Fatalf("EraseOwner deleted %d (%v), want 2: the avatar and the upload never sent", n, err)
	}
	left := strings.Join(e.stored(t), " ")
	for _, id := range []string{avatar.ObjectID, unsent.ObjectID} {
		if _, err := e.repo.Get(ctx, id); !isKind(err, domain.ErrObjectNotFound) {
			t.Errorf("object %s kept: %v", id, err)
		}
		if strings.Contains(left, id[1:]) {
			t.Errorf("bytes of %s left: %s", id, left)
		}
	}
	for _, id := range []string{sent.ObjectID, other.ObjectID} {
		if _, err := e.repo.Get(ctx, id); err != nil {
			t.Errorf("object %s deleted: %v", id, err)
		}
		if !strings.Contains(left, filepath.Join("o", id[1:])) {
			t.Errorf("bytes of %s gone: %s", id, left)
		}
	}
	if n, err := e.svc.EraseOwner(ctx, "ann"); err != nil || n != 0 {
		t.Fatalf("erasing again deleted %d (%v), want 0", n, err)
	}
}
