package media_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/media"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// Env variables naming the test S3-compatible server (.ci/run starts
// versitygw and sets them).
const (
	EnvS3Endpoint  = "NEXO_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "NEXO_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "NEXO_TEST_S3_SECRET_KEY"
)

// s3Config returns the test server's settings with a fresh bucket, or
// fails under CI=true / skips elsewhere when it is not reachable.
func s3Config(t testing.TB) configs.ObjectsS3 {
	t.Helper()
	ep := os.Getenv(EnvS3Endpoint)
	cfg := configs.ObjectsS3{Endpoint: ep, Region: "us-east-1", Bucket: strings.ReplaceAll(storetest.RandomName("nexo-t-"), "_", "-"),
		PathStyle: true, AccessKey: os.Getenv(EnvS3AccessKey), SecretKey: os.Getenv(EnvS3SecretKey), CreateBucket: true}
	var err error
	if ep == "" {
		err = fmt.Errorf("%s is empty", EnvS3Endpoint)
	} else {
		var resp *http.Response
		if resp, err = http.Get("http://" + ep + "/"); err == nil {
			resp.Body.Close()
		}
	}
	if err != nil {
		msg := fmt.Sprintf("S3 test server not reachable (%v); run versitygw and set %s, %s, %s (.ci/run does)", err, EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", msg)
		}
		t.Skip(msg)
	}
	return cfg
}

// clock is a settable time for URL expiry and the cleaner.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// visibility stubs the message visibility rules: status per user,
// conversation and seq ("" = not a member at all).
type visibility struct {
	mu     sync.Mutex
	status map[string]string
}

func (v *visibility) set(user, conv string, seq int64, status string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.status[fmt.Sprintf("%s|%s|%d", user, conv, seq)] = status
}

func (v *visibility) PullBySeqs(_ context.Context, user, conv string, seqs []int64) (chat.PullResult, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var res chat.PullResult
	member := false
	for _, s := range seqs {
		st, ok := v.status[fmt.Sprintf("%s|%s|%d", user, conv, s)]
		if ok {
			member = true
		} else {
			st = string(domain.StatusUnavailable)
		}
		res.Messages = append(res.Messages, chat.MessageJSON{Seq: s, Status: st})
	}
	if !member {
		return res, domain.ErrNotConversationMember
	}
	return res, nil
}

// env is one service on one backend.
type env struct {
	name  string
	db    *store.DB
	svc   *media.Service
	repo  *store.ObjectRepo
	st    media.Storage
	local *media.Local
	s3    *minio.Client
	s3cfg configs.ObjectsS3
	dir   string
	clock *clock
	vis   *visibility
	cfg   configs.Objects
}

func testConfig() configs.Objects {
	c := configs.Default().Objects
	c.OrphanTTL = time.Hour
	c.CleanInterval = time.Second
	return c
}

// backends runs f on the local and the S3 backend, each with a SQLite
// database (the store contract runs on MariaDB too: TestObjectRepo).
func backends(t *testing.T, mod func(*configs.Objects), f func(t *testing.T, e *env)) {
	for _, name := range []string{"local", "s3"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, name, storetest.SQLite(t), mod)
			f(t, e)
		})
	}
}

func newEnv(t testing.TB, backend string, db *store.DB, mod func(*configs.Objects)) *env {
	t.Helper()
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	e := &env{name: backend, db: db, clock: &clock{t: time.Now()}, vis: &visibility{status: map[string]string{}}, cfg: cfg}
	switch backend {
	case "local":
		e.dir = filepath.Join(t.TempDir(), "objects")
		l, err := media.NewLocal(e.dir, "http://nexo.test", media.NewSigner([]byte("test secret"), e.clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		e.st, e.local = l, l
	case "s3":
		e.s3cfg = s3Config(t)
		s, err := media.NewS3(context.Background(), e.s3cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.st = s
		e.s3, err = minio.New(e.s3cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(e.s3cfg.AccessKey, e.s3cfg.SecretKey, ""), BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
	}
	e.repo = store.NewObjectRepo(db)
	e.svc = media.NewService(media.Deps{Config: cfg, Repo: e.repo, Storage: e.st, Messages: e.vis, Now: e.clock.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.svc.Thumbnails().Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// stored lists the keys the backend holds (parts of uploads included).
func (e *env) stored(t *testing.T) []string {
	t.Helper()
	var keys []string
	switch e.name {
	case "local":
		_ = filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(e.dir, p)
				keys = append(keys, rel)
			}
			return nil
		})
	case "s3":
		for o := range e.s3.ListObjects(context.Background(), e.s3cfg.Bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// fetch GETs a download URL: the local backend's through the same checks
// the GET /object/file route makes (signature, then the file), the S3
// one's from the server. It returns the status, the body and the
// Content-Disposition.
func (e *env) fetch(t *testing.T, raw string) (int, []byte, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if e.local != nil {
		if err := e.local.Signer().Verify("GET", u.Path, u.Query()); err != nil {
			switch {
			case errors.Is(err, domain.ErrURLExpired):
				return 403, []byte("expired"), ""
			default:
				return 403, []byte("invalid"), ""
			}
		}
		r, err := e.local.Open(context.Background(), u.Query().Get("key"), 0, -1)
		if err != nil {
			return 404, nil, ""
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return 200, b, media.AttachmentHeader(u.Query().Get("name"))
	}
	resp, err := http.Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header.Get("Content-Disposition")
}

// putPart PUTs one part to its upload URL and returns the ETag.
func (e *env) putPart(t *testing.T, raw string, n int, data []byte) string {
	t.Helper()
	if e.local != nil {
		u, _ := url.Parse(raw)
		if err := e.local.Signer().Verify("PUT", u.Path, u.Query()); err != nil {
			t.Fatalf("part %d URL: %v", n, err)
		}
		etag, err := e.local.PutPart(context.Background(), u.Query().Get("key"), u.Query().Get("upload_id"), n, strings.NewReader(string(data)), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return etag
	}
	req, _ := http.NewRequest("PUT", raw, strings.NewReader(string(data)))
	req.ContentLength = int64(len(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT part %d: %d %s", n, resp.StatusCode, b)
	}
	return strings.Trim(resp.Header.Get("ETag"), `"`)
}
