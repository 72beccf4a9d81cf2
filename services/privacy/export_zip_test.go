package privacy_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/media"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// mediaEnv is a privacy service whose exports read objects from a real
// media service on the local backend, on MariaDB.
type mediaEnv struct {
	db    *store.DB
	dir   string
	media *media.Service
	svc   *privacy.Service
	users *store.UserRepo
	seq   int64
}

func newMediaEnv(t *testing.T) *mediaEnv {
	t.Helper()
	e := &mediaEnv{db: storetest.MySQL(t), dir: filepath.Join(t.TempDir(), "objects")}
	local, err := media.NewLocal(e.dir, "", media.NewSigner([]byte("test secret"), nil))
	if err != nil {
		t.Fatal(err)
	}
	e.users = store.NewUserRepo(e.db)
	e.media = media.NewService(media.Deps{Config: configs.Default().Objects, Repo: store.NewObjectRepo(e.db), Storage: local, Log: quiet})
	e.svc = privacy.NewService(privacy.Deps{Users: e.users, Groups: noGroups{}, Store: store.NewPrivacyRepo(e.db), Media: e.media, Log: quiet})
	return e
}

func (e *mediaEnv) upload(t *testing.T, owner, name, purpose string, data []byte) string {
	t.Helper()
	o, err := e.media.Upload(context.Background(), owner, media.UploadRequest{Name: name, Purpose: purpose, Size: int64(len(data)), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
	return o.ObjectID
}

// send saves a message carrying objectID ("" for a text) from one user to
// another and records its ref, as the save stage does.
func (e *mediaEnv) send(t *testing.T, from, to string, msgType domain.MsgType, objectID string) int64 {
	t.Helper()
	e.seq++
	m := domain.Message{ServerMsgID: fmt.Sprint("zs-", e.seq), ClientMsgID: fmt.Sprint("zc-", e.seq), ConversationID: domain.SingleConversationID(from, to),
		Seq: e.seq, SenderID: from, RecvID: to, SessionType: domain.SessionSingle, MsgType: msgType, Status: domain.StatusNormal, SendAt: 1700000000000 + e.seq}
	ref := `{"object_id":"` + objectID + `"}`
	switch msgType {
	case domain.MsgPicture:
		m.Content.Image = ref
	case domain.MsgFile:
		m.Content.File = ref
	default:
		m.Content.Text = "hello"
	}
	ctx := context.Background()
	if _, err := store.NewMessageRepo(e.db).SaveBatch(ctx, []domain.Message{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.media.AfterSave(ctx, []domain.Message{m}, nil); err != nil {
		t.Fatal(err)
	}
	return e.seq
}

// withoutExportedAt decodes an export document and drops exported_at.
func withoutExportedAt(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, raw)
	}
	if _, ok := doc["exported_at"]; !ok {
		t.Fatal("no exported_at")
	}
	delete(doc, "exported_at")
	return doc
}

// readZip reads every entry of an archive.
func readZip(t *testing.T, raw []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatalf("not a ZIP: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if _, dup := out[f.Name]; dup {
			t.Fatalf("%s twice", f.Name)
		}
		out[f.Name] = b
	}
	return out
}

// TestExportZip: the ZIP export of a user who sent a picture (twice: one
// object, two messages) and received a file holds export.json — the JSON
// export but for exported_at — and each object's exact bytes once under
// media/<object_id>/<name>, plus the user's avatar; an object whose bytes
// are gone is in media/missing.json; a recalled message's object and
// another user's objects are not there. Without the media service the
// archive is export.json alone.
func TestExportZip(t *testing.T) {
	ctx := context.Background()
	e := newMediaEnv(t)
	pic, doc, avatar := pngOf(t, 40, 30), []byte("minutes of the meeting\n"), pngOf(t, 8, 8)
	gone, recalled, other := []byte("this file's bytes vanish"), []byte("recalled file"), []byte("zob's own, never sent to zoa")
	avatarID := e.upload(t, "zoa", "me.png", domain.PurposeAvatar, avatar)
	for _, u := range []domain.User{{ID: "zoa", Nickname: "Zoa", Avatar: avatarID}, {ID: "zob", Nickname: "Zob"}, {ID: "zoc", Nickname: "Zoc"}} {
		if _, err := e.users.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	picID := e.upload(t, "zoa", "beach day.png", "", pic)
	docID := e.upload(t, "zob", "minutes.txt", "", doc)
	goneID := e.upload(t, "zoa", "gone.txt", "", gone)
	recalledID := e.upload(t, "zoa", "recalled.txt", "", recalled)
	otherID := e.upload(t, "zob", "other.txt", "", other)

	e.send(t, "zoa", "zob", domain.MsgPicture, picID)
	e.send(t, "zob", "zoa", domain.MsgFile, docID)
	e.send(t, "zoa", "zob", domain.MsgText, "")
	e.send(t, "zoa", "zoc", domain.MsgPicture, picID) // the same picture again, elsewhere
	e.send(t, "zoa", "zoc", domain.MsgFile, goneID)
	rseq := e.send(t, "zoa", "zob", domain.MsgFile, recalledID)
	e.send(t, "zob", "zoc", domain.MsgFile, otherID) // not zoa's conversation
	if _, err := store.NewRevokeRepo(e.db).Revoke(ctx, domain.SingleConversationID("zoa", "zob"), rseq); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, "o", goneID[1:])); err != nil {
		t.Fatal(err)
	}

	var plain, zipped bytes.Buffer
	if err := e.svc.Export(ctx, "zoa", &plain); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.ExportZip(ctx, "zoa", &zipped); err != nil {
		t.Fatal(err)
	}
	files := readZip(t, zipped.Bytes())
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"export.json", "media/" + avatarID + "/me.png", "media/" + docID + "/minutes.txt",
		"media/" + picID + "/beach day.png", "media/missing.json"}
	sort.Strings(want)
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("entries\n %v\nwant\n %v", names, want)
	}
	if got, w := withoutExportedAt(t, files["export.json"]), withoutExportedAt(t, plain.Bytes()); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("export.json differs from the JSON export:\n%v\n%v", got, w)
	}
	if msgs := withoutExportedAt(t, plain.Bytes())["messages"].([]any); len(msgs) != 6 {
		t.Fatalf("the JSON export has %d messages, want 6", len(msgs))
	}
	for id, b := range map[string][]byte{avatarID + "/me.png": avatar, docID + "/minutes.txt": doc, picID + "/beach day.png": pic} {
		if !bytes.Equal(files["media/"+id], b) {
			t.Errorf("media/%s: %d bytes, not the %d uploaded", id, len(files["media/"+id]), len(b))
		}
	}
	var missing privacy.MissingJSON
	if err := json.Unmarshal(files["media/missing.json"], &missing); err != nil || fmt.Sprint(missing.ObjectIDs) != fmt.Sprint([]string{goneID}) {
		t.Fatalf("missing.json = %s (%v), want [%s]", files["media/missing.json"], err, goneID)
	}

	// zob's export: the picture zoa sent him, his files to zoa and to zoc;
	// neither the recalled file nor the one zoa sent zoc.
	zipped.Reset()
	if err := e.svc.ExportZip(ctx, "zob", &zipped); err != nil {
		t.Fatal(err)
	}
	files = readZip(t, zipped.Bytes())
	if len(files) != 4 || files["media/"+picID+"/beach day.png"] == nil || files["media/"+docID+"/minutes.txt"] == nil ||
		files["media/"+otherID+"/other.txt"] == nil {
		t.Fatalf("zob's archive holds %d entries: %v", len(files), keys(files))
	}

	// Uploads off: export.json alone.
	off := privacy.NewService(privacy.Deps{Users: e.users, Groups: noGroups{}, Store: store.NewPrivacyRepo(e.db), Log: quiet})
	zipped.Reset()
	if err := off.ExportZip(ctx, "zoa", &zipped); err != nil {
		t.Fatal(err)
	}
	if files = readZip(t, zipped.Bytes()); len(files) != 1 || files["export.json"] == nil {
		t.Fatalf("without media: %v", keys(files))
	}
	if err := e.svc.ExportZip(ctx, "nobody", &zipped); !errors.Is(err, domain.ErrUserNotFound) {
		t.Fatalf("export of nobody: %v", err)
	}
}

// TestExportZipStreamsLargeObjects: a 20 MiB object goes into the archive
// without the heap growing by its size: it is copied through one buffer.
func TestExportZipStreamsLargeObjects(t *testing.T) {
	ctx := context.Background()
	e := newMediaEnv(t)
	for _, u := range []string{"zla", "zlb"} {
		if _, err := e.users.Create(ctx, domain.User{ID: u, Nickname: u}); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 20<<20)
	_, _ = rand.Read(big)
	id := e.upload(t, "zla", "big.bin", "", big)
	e.send(t, "zla", "zlb", domain.MsgFile, id)
	big = nil // only the backend holds it now

	out, err := os.Create(filepath.Join(t.TempDir(), "export.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	w := &heapWatch{w: out}
	if err := e.svc.ExportZip(ctx, "zla", w); err != nil {
		t.Fatal(err)
	}
	growth := int64(w.maxHeap) - int64(base.HeapAlloc)
	t.Logf("archive of %.1f MB; heap %.1f MB before, at most %.1f MB during (+%.1f MB)",
		float64(w.bytes)/1e6, float64(base.HeapAlloc)/1e6, float64(w.maxHeap)/1e6, float64(growth)/1e6)
	if w.bytes < 20<<20 {
		t.Fatalf("the archive is %d bytes: the object is not in it", w.bytes)
	}
	// Held in memory, the object alone would add 20 MiB.
	if limit := int64(8 << 20); growth > limit {
		t.Fatalf("the heap grew by %d bytes while archiving a %d-byte object (limit %d)", growth, 20<<20, limit)
	}
	raw, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	files := readZip(t, raw)
	if got := files["media/"+id+"/big.bin"]; len(got) != 20<<20 {
		t.Fatalf("the object in the archive has %d bytes", len(got))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pngOf is a w×h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
