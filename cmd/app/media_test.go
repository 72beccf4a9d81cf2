package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store/storetest"
)

// uploadFile POSTs data as the multipart field file to /object/upload.
func uploadFile(t *testing.T, base, token, name, contentType string, data []byte) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{contentType}
	part, _ := w.CreatePart(h)
	_, _ = part.Write(data)
	_ = w.Close()
	req, _ := http.NewRequest("POST", base+"/object/upload", &body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("upload: %d %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, env
}

func errReason(env map[string]any) string { return fmt.Sprint(env["err_msg"]) }

// TestMediaEndToEnd runs the object routes on the embedded default, with
// the local backend and with S3 (the test server), under the real
// visibility rules: a picture sent to a group is
// readable by its owner and a member, not by a member who left before it,
// one who joined after it, or a stranger, nor by the member once recalled;
// its URL works without a token, as an attachment, and not once altered.
func TestMediaEndToEnd(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg := embeddedConfig(t)
			if backend == "s3" {
				cfg.Objects.Backend, cfg.Objects.S3 = "s3", s3TestConfig(t)
			}
			mediaEndToEnd(t, cfg)
		})
	}
}

// s3TestConfig is the S3 test server (.ci/run starts versitygw) with a
// fresh bucket; it fails under CI=true and skips elsewhere when unset.
func s3TestConfig(t *testing.T) configs.ObjectsS3 {
	t.Helper()
	ep := os.Getenv("NEXO_TEST_S3_ENDPOINT")
	if ep == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: NEXO_TEST_S3_ENDPOINT is empty (.ci/run starts versitygw and sets it)")
		}
		t.Skip("NEXO_TEST_S3_ENDPOINT is empty: run versitygw and set NEXO_TEST_S3_ENDPOINT, NEXO_TEST_S3_ACCESS_KEY, NEXO_TEST_S3_SECRET_KEY")
	}
	return configs.ObjectsS3{Endpoint: ep, Region: "us-east-1", Bucket: strings.ReplaceAll(storetest.RandomName("nexo-e-"), "_", "-"),
		PathStyle: true, AccessKey: os.Getenv("NEXO_TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("NEXO_TEST_S3_SECRET_KEY"), CreateBucket: true}
}

// abs makes a local backend's path URL absolute on base.
func abs(base, u string) string {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return base + u
}

func mediaEndToEnd(t *testing.T, cfg configs.Config) {
	local := cfg.Objects.Backend != "s3"
	base, _, _ := startApp(t, cfg)
	tok := map[string]string{}
	for _, u := range []string{"mdalice", "mdbob", "mdcarol", "mddave", "mdeve"} {
		tok[u] = user(t, base, u)
	}
	code, env := call(t, "POST", base+"/group/create", `{"name":"pics","member_ids":["mdbob","mdcarol"],"join_policy":"open"}`, tok["mdalice"])
	if code != 200 {
		t.Fatalf("create group: %d %v", code, env)
	}
	gid := dataField(env, "group_id")
	if code, env := call(t, "POST", base+"/group/quit", fmt.Sprintf(`{"group_id":%q}`, gid), tok["mdcarol"]); code != 200 {
		t.Fatalf("carol quits: %d %v", code, env)
	}

	img := image.NewRGBA(image.Rect(0, 0, 640, 480))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	var pngBuf bytes.Buffer
	_ = png.Encode(&pngBuf, img)
	code, env = uploadFile(t, base, tok["mdalice"], "holiday.png", "image/png", pngBuf.Bytes())
	if code != 200 || dataField(env, "width") != "640" || dataField(env, "content_type") != "image/png" {
		t.Fatalf("upload: %d %v", code, env)
	}
	objectID := dataField(env, "object_id")
	code, env = uploadFile(t, base, tok["mdalice"], "notes.txt", "text/plain", []byte("plain notes"))
	if code != 200 {
		t.Fatalf("upload text: %d %v", code, env)
	}
	textID := dataField(env, "object_id")
	if code, env := uploadFile(t, base, tok["mdalice"], "fake.png", "image/png", []byte("not a picture at all")); code != 400 || errReason(env) != "object_type_mismatch" {
		t.Fatalf("text as png: %d %v", code, env)
	}
	if code, env := call(t, "POST", base+"/object/upload", `{"file":"x"}`, tok["mdalice"]); code != 415 {
		t.Fatalf("JSON to /object/upload: %d %v", code, env)
	}

	send := func(who, cmid string, msgType int, ref string) (int, map[string]any) {
		return call(t, "POST", base+"/msg/send", fmt.Sprintf(`{"client_msg_id":%q,"session_type":3,"group_id":%q,"msg_type":%d,"content":{%q:%s}}`,
			cmid, gid, msgType, map[int]string{102: "image", 105: "file"}[msgType], ref), tok[who])
	}
	if code, env := send("mdalice", "p0", 102, fmt.Sprintf(`{"object_id":%q}`, textID)); code != 400 || errReason(env) != "object_type_mismatch" {
		t.Fatalf("102 with a text file: %d %v", code, env)
	}
	if code, env := send("mdbob", "b0", 102, fmt.Sprintf(`{"object_id":%q}`, objectID)); code != 403 || errReason(env) != "object_access_denied" {
		t.Fatalf("bob sends alice's unsent picture: %d %v", code, env)
	}
	code, env = send("mdalice", "p1", 102, fmt.Sprintf(`{"object_id":%q}`, objectID))
	if code != 200 {
		t.Fatalf("send picture: %d %v", code, env)
	}
	seq := dataField(env, "seq")
	if code, env := call(t, "POST", base+"/group/join", fmt.Sprintf(`{"group_id":%q}`, gid), tok["mddave"]); code != 200 {
		t.Fatalf("dave joins: %d %v", code, env)
	}

	urlOf := func(who string) (int, map[string]any) {
		return call(t, "GET", base+"/object/url?object_id="+objectID, "", tok[who])
	}
	// The reference is recorded when the message is saved.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, env = urlOf("mdbob")
		if code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the save stage
	}
	if code != 200 {
		t.Fatalf("member's URL: %d %v", code, env)
	}
	u := dataField(env, "url")
	resp, err := http.Get(abs(base, u))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, pngBuf.Bytes()) || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
		local && resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET %s: %d, %d bytes, headers %v", u, resp.StatusCode, len(got), resp.Header)
	}
	if local {
		tampered := strings.Replace(u, "sig=", "sig=A", 1)
		if code, env := call(t, "GET", base+tampered, "", ""); code != 403 || errReason(env) != "object_url_invalid" {
			t.Fatalf("tampered URL: %d %v", code, env)
		}
	} else {
		i := strings.Index(u, "X-Amz-Signature=") + len("X-Amz-Signature=")
		c := "0"
		if u[i] == '0' {
			c = "1"
		}
		resp, err := http.Get(u[:i] + c + u[i+1:])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("tampered S3 URL: %d", resp.StatusCode)
		}
	}
	for who, want := range map[string]int{"mdalice": 200, "mdcarol": 403, "mddave": 403, "mdeve": 403} {
		if code, env := urlOf(who); code != want {
			t.Errorf("%s: %d %v, want %d", who, code, env, want)
		}
	}
	code, env = call(t, "POST", base+"/msg/pull_by_seqs", fmt.Sprintf(`{"conversation_id":"sg_%s","seqs":[%s]}`, gid, seq), tok["mdbob"])
	if code != 200 {
		t.Fatalf("pull: %d %v", code, env)
	}
	raw, _ := json.Marshal(env["data"])
	if s := string(raw); !strings.Contains(s, `"object_id":"`+objectID+`"`) || !strings.Contains(s, `"has_thumbnail":true`) ||
		!strings.Contains(s, `"sha256":"`) || strings.Contains(s, "/object/file") {
		t.Fatalf("pulled message: %s", s)
	}
	if code, env := call(t, "GET", base+"/object/url?variant=thumbnail&object_id="+objectID, "", tok["mdbob"]); code != 200 {
		t.Fatalf("thumbnail URL: %d %v", code, env)
	}

	if code, env := call(t, "POST", base+"/msg/revoke", fmt.Sprintf(`{"conversation_id":"sg_%s","seq":%s}`, gid, seq), tok["mdalice"]); code != 200 {
		t.Fatalf("recall: %d %v", code, env)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, env = urlOf("mdbob")
		if code == 403 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the recall's save
	}
	if code != 403 || errReason(env) != "object_access_denied" {
		t.Fatalf("after recall: %d %v", code, env)
	}
	if code, _ := urlOf("mdalice"); code != 200 {
		t.Fatalf("owner after recall: %d", code)
	}

	// Multipart over HTTP: a Nexo-signed part URL, no token.
	code, env = call(t, "POST", base+"/object/multipart/initiate", `{"name":"data.bin","size":11}`, tok["mdalice"])
	if code != 200 {
		t.Fatalf("initiate: %d %v", code, env)
	}
	var up struct {
		UploadID string `json:"upload_id"`
		Parts    []struct {
			Number int    `json:"part_number"`
			URL    string `json:"url"`
		} `json:"parts"`
	}
	raw, _ = json.Marshal(env["data"])
	_ = json.Unmarshal(raw, &up)
	req, _ := http.NewRequest("PUT", abs(base, up.Parts[0].URL), strings.NewReader("hello world"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := strings.Trim(resp.Header.Get("ETag"), `"`)
	if resp.StatusCode != 200 || etag == "" {
		t.Fatalf("PUT part: %d etag %q", resp.StatusCode, etag)
	}
	code, env = call(t, "POST", base+"/object/multipart/complete", fmt.Sprintf(`{"upload_id":%q,"parts":[{"part_number":1,"etag":%q}]}`, up.UploadID, etag), tok["mdalice"])
	if code != 200 || dataField(env, "size") != "11" || dataField(env, "sha256") != "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9" {
		t.Fatalf("complete: %d %v", code, env)
	}
	if code, env := call(t, "GET", base+"/object/info?object_id="+dataField(env, "object_id"), "", tok["mdalice"]); code != 200 || dataField(env, "name") != "data.bin" {
		t.Fatalf("info: %d %v", code, env)
	}
	code, env = call(t, "POST", base+"/object/multipart/initiate", `{"name":"gone.bin","size":11}`, tok["mdalice"])
	if code != 200 {
		t.Fatalf("initiate: %d %v", code, env)
	}
	gone := dataField(env, "upload_id")
	if code, env := call(t, "POST", base+"/object/multipart/abort", fmt.Sprintf(`{"upload_id":%q}`, gone), tok["mdalice"]); code != 200 {
		t.Fatalf("abort: %d %v", code, env)
	}
	if code, env := call(t, "GET", base+"/object/multipart/parts?upload_id="+gone, "", tok["mdalice"]); code != 404 || errReason(env) != "upload_not_found" {
		t.Fatalf("parts after abort: %d %v", code, env)
	}
}
