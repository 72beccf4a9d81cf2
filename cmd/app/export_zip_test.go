package app

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/services/media"
)

// fetchExport GETs an export with the given Authorization header and
// returns the status, the headers and the body.
func fetchExport(t *testing.T, url, authorization string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, raw
}

// unzip reads every entry of an archive.
func unzip(t *testing.T, raw []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatalf("not a ZIP (%d bytes): %v", len(raw), err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name], err = io.ReadAll(r)
		_ = r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	return out
}

// sameExport compares two export documents but for exported_at.
func sameExport(t *testing.T, a, b []byte) {
	t.Helper()
	var da, db map[string]any
	if err := json.Unmarshal(a, &da); err != nil {
		t.Fatalf("export.json: %v", err)
	}
	if err := json.Unmarshal(b, &db); err != nil {
		t.Fatalf("JSON export: %v", err)
	}
	delete(da, "exported_at")
	delete(db, "exported_at")
	if fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("export.json differs from the JSON export:\n%v\n%v", da, db)
	}
}

// TestExportZipRoutes (MariaDB, Redis; local objects, and S3 when the
// test server is there): GET /user/export?format=zip answers an
// application/zip attachment holding export.json — the JSON export but
// for exported_at — and the exact bytes of the picture the user sent and
// the file they received, and media/missing.json for the file whose bytes
// are gone; format=json is the default; an unknown format
// is bad_request and does not count against limits.export, which counts
// both formats; /api/user/export takes the same formats. Deleting the
// account then erases the user's upload never sent, not the file their
// message carries.
func TestExportZipRoutes(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg := apiConfig(t)
			cfg.Objects.Backend, cfg.Objects.Local.Dir = "local", t.TempDir()
			if backend == "s3" {
				cfg.Objects.Backend, cfg.Objects.S3 = "s3", s3TestConfig(t)
			}
			cfg.Limits.Export = configs.Rate{Rate: 2, Period: time.Hour, Burst: 2}
			exportZipRoutes(t, cfg)
		})
	}
}

func exportZipRoutes(t *testing.T, cfg configs.Config) {
	base, _, _ := startApp(t, cfg)
	tok := modUsers(t, base, "zia", "zeb")

	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	img.Set(3, 3, color.RGBA{0, 200, 0, 255})
	var pic bytes.Buffer
	_ = png.Encode(&pic, img)
	doc := []byte("the agenda, in plain text\n")
	code, env := uploadFile(t, base, tok["zia"], "garden.png", "image/png", pic.Bytes())
	if code != 200 {
		t.Fatalf("upload picture: %d %v", code, env)
	}
	picID := dataField(env, "object_id")
	if code, env = uploadFile(t, base, tok["zeb"], "agenda.txt", "text/plain", doc); code != 200 {
		t.Fatalf("upload file: %d %v", code, env)
	}
	docID := dataField(env, "object_id")
	send := func(from, to, cmid string, msgType int, field, id string) {
		body := fmt.Sprintf(`{"client_msg_id":%q,"session_type":1,"recv_id":%q,"msg_type":%d,"content":{%q:{"object_id":%q}}}`, cmid, to, msgType, field, id)
		if code, env := call(t, "POST", base+"/msg/send", body, tok[from]); code != 200 {
			t.Fatalf("send %s: %d %v", cmid, code, env)
		}
	}
	if code, env = uploadFile(t, base, tok["zia"], "lost.txt", "text/plain", []byte("bytes about to vanish")); code != 200 {
		t.Fatalf("upload file: %d %v", code, env)
	}
	lostID := dataField(env, "object_id")
	send("zia", "zeb", "zp-1", 102, "image", picID)
	send("zeb", "zia", "zf-1", 105, "file", docID)
	send("zia", "zeb", "zl-1", 105, "file", lostID)
	// The lost file's bytes disappear from the backend.
	var st media.Storage
	var err error
	if cfg.Objects.Backend == "s3" {
		st, err = media.NewS3(context.Background(), cfg.Objects.S3)
	} else {
		st, err = media.NewLocal(cfg.Objects.Local.Dir, "", media.NewSigner([]byte(cfg.JWT.Secret), nil))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(context.Background(), "o/"+lostID[1:]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pull := mustCall(t, "GET", base+"/msg/pull?conversation_id=si_zeb_zia&begin_seq=1", "", tok["zia"])
		if ms, _ := pull["messages"].([]any); len(ms) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("messages not saved")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}

	bearer := "Bearer " + tok["zia"]
	code, _, raw := fetchExport(t, base+"/user/export?format=xml", bearer)
	var bad map[string]any
	_ = json.Unmarshal(raw, &bad)
	if code != 400 || bad["err_msg"] != "bad_request" {
		t.Fatalf("format=xml: %d %s", code, raw)
	}
	code, h, plain := fetchExport(t, base+"/user/export", bearer)
	if code != 200 || h.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("JSON export: %d %v %.200s", code, h, plain)
	}
	code, h, raw = fetchExport(t, base+"/user/export?format=zip", bearer)
	if code != 200 || h.Get("Content-Type") != "application/zip" || h.Get("Content-Disposition") != `attachment; filename="nexo-export-zia.zip"` {
		t.Fatalf("ZIP export: %d %v %.200q", code, h, raw)
	}
	files := unzip(t, raw)
	if len(files) != 4 {
		t.Fatalf("the archive holds %d entries, want export.json, two objects and missing.json", len(files))
	}
	if m := string(files["media/missing.json"]); m != `{"object_ids":["`+lostID+`"]}`+"\n" {
		t.Fatalf("missing.json = %q", m)
	}
	sameExport(t, files["export.json"], plain)
	if got := files["media/"+picID+"/garden.png"]; !bytes.Equal(got, pic.Bytes()) {
		t.Fatalf("the picture in the archive: %d bytes, uploaded %d", len(got), pic.Len())
	}
	if got := files["media/"+docID+"/agenda.txt"]; !bytes.Equal(got, doc) {
		t.Fatalf("the file in the archive: %q", got)
	}
	if code, _, raw := fetchExport(t, base+"/user/export?format=zip", bearer); code != 429 {
		t.Fatalf("a third export within the hour (limit 2): %d %.200s", code, raw)
	}

	key := "apikey " + apiKey
	if code, _, raw := fetchExport(t, base+"/api/user/export?user_id=zeb&format=tar", key); code != 400 {
		t.Fatalf("server API format=tar: %d %s", code, raw)
	}
	_, _, plain = fetchExport(t, base+"/api/user/export?user_id=zeb&format=json", key)
	code, h, raw = fetchExport(t, base+"/api/user/export?user_id=zeb&format=zip", key)
	if code != 200 || h.Get("Content-Disposition") != `attachment; filename="nexo-export-zeb.zip"` {
		t.Fatalf("server API ZIP export: %d %v", code, h)
	}
	files = unzip(t, raw)
	sameExport(t, files["export.json"], plain)
	if len(files) != 4 || !bytes.Equal(files["media/"+picID+"/garden.png"], pic.Bytes()) || !bytes.Equal(files["media/"+docID+"/agenda.txt"], doc) {
		t.Fatalf("server API archive: %d entries", len(files))
	}

	// Deleting zeb erases the upload he never sent, bytes and all; the file
	// his message carries stays with the message.
	if code, env = uploadFile(t, base, tok["zeb"], "draft.txt", "text/plain", []byte("never sent")); code != 200 {
		t.Fatalf("upload draft: %d %v", code, env)
	}
	draftID := dataField(env, "object_id")
	mustAPI(t, "POST", base+"/api/user/delete", `{"user_id":"zeb"}`)
	if r, err := st.Open(context.Background(), "o/"+draftID[1:], 0, -1); !errors.Is(err, media.ErrNoSuchKey) {
		if r != nil {
			_ = r.Close()
		}
		t.Fatalf("the deleted user's unsent upload is still stored: %v", err)
	}
	r, err := st.Open(context.Background(), "o/"+docID[1:], 0, -1)
	if err != nil {
		t.Fatalf("the file zeb's message carries went with his account: %v", err)
	}
	_ = r.Close()
}
