package configs

import (
	"strings"
	"testing"
)

func TestObjectsBackendByMode(t *testing.T) {
	cluster := func() Config {
		c := Default()
		c.MySQL.DSN, c.Redis.Addr, c.JWT.Secret = "root:@tcp(db:3306)/nexo", "redis:6379", strings.Repeat("s", 32)
		return c
	}
	emb := Default()
	emb.ResolveObjects()
	if emb.Objects.Backend != ObjectsBackendLocal || emb.Objects.Local.Dir != "data/objects" {
		t.Fatalf("embedded default: backend %q dir %q", emb.Objects.Backend, emb.Objects.Local.Dir)
	}
	c := cluster()
	if err := c.Validate(); err != nil {
		t.Fatalf("cluster without objects.backend: %v", err)
	}
	if c.ResolveObjects(); c.Objects.Backend != "" {
		t.Fatalf("cluster default backend %q, want off", c.Objects.Backend)
	}
	c = cluster()
	c.Objects.Backend, c.Objects.Local.Dir = ObjectsBackendLocal, "/mnt/objects"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "objects.local.shared") {
		t.Fatalf("cluster with an unshared local dir: %v", err)
	}
	c.Objects.Local.Shared = true
	if err := c.Validate(); err != nil {
		t.Fatalf("cluster with a shared local dir: %v", err)
	}
	c = cluster()
	c.Objects.Backend = ObjectsBackendS3
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "objects.s3.endpoint") || !strings.Contains(err.Error(), "objects.s3.bucket") {
		t.Fatalf("s3 without endpoint and bucket: %v", err)
	}
	c.Objects.S3.Endpoint, c.Objects.S3.Bucket = "minio:9000", "nexo"
	if err := c.Validate(); err != nil {
		t.Fatalf("s3: %v", err)
	}
}
