// Package media is the object service behind /object/* (gateway/routes/
// media.go): direct and multipart uploads into a storage backend (a local
// directory or any S3-compatible service), content sniffing and the checks
// on it, signed download URLs and who may have them, thumbnails made by a
// background stage, quotas, and the cleaner of orphans. docs/media.md
// describes it.
package media

import (
	"context"
	"errors"
	"io"
	"time"
)

// Part is one uploaded part of a multipart upload: its number (1..10000),
// its ETag (as the backend reports it, without quotes) and size in bytes.
type Part struct {
	Number int    `json:"part_number"`
	ETag   string `json:"etag"`
	Size   int64  `json:"size,omitempty"`
}

// Download is how a signed download URL presents the object: its file name
// and content type, always as an attachment.
type Download struct {
	Name        string
	ContentType string
}

// Storage is where object bytes live. Keys are the service's own
// ("o/<id>", "t/<id>"); implementations must be safe for concurrent use.
// Every method returns ErrNoSuchKey (wrapped) for a key or upload that does
// not exist.
type Storage interface {
	// Put stores size bytes read from r at key.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Open reads key from byte offset off; length < 0 reads to the end.
	Open(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Initiate starts a multipart upload to key and returns its ID.
	Initiate(ctx context.Context, key, contentType string) (string, error)
	// PartURL is a URL that accepts one PUT of part number n, valid until exp.
	PartURL(ctx context.Context, key, uploadID string, n int, exp time.Time) (string, error)
	// Parts lists what was uploaded so far, ascending by number.
	Parts(ctx context.Context, key, uploadID string) ([]Part, error)
	// Complete assembles the parts (ascending, all present) into key.
	Complete(ctx context.Context, key, uploadID string, parts []Part) error
	// Abort discards an upload and its parts; a missing upload is not an error.
	Abort(ctx context.Context, key, uploadID string) error
	// URL is a GET URL for key, valid until exp without a token, that
	// serves it as an attachment named d.Name of type d.ContentType.
	URL(ctx context.Context, key string, d Download, exp time.Time) (string, error)
}

// ErrNoSuchKey: the backend has no such key or upload.
var ErrNoSuchKey = errors.New("no such key")
