package media

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// Paths of the routes that serve the local backend's signed URLs
// (gateway/routes/media.go).
const (
	LocalFilePath = "/object/file"
	LocalPartPath = "/object/part"
)

// Local stores objects as files under a directory: keys are relative
// paths, multipart parts live under uploads/<upload_id>/ until completed.
// Its URLs point at Nexo's own routes and are signed by Signer.
type Local struct {
	dir    string
	base   string // objects.public_url, without a trailing slash
	signer *Signer
}

var _ Storage = (*Local)(nil)

// safeKey is what a key may look like: the service's own keys only, so a
// key from a (signed) URL can never name a path outside the directory.
var (
	safeKey    = regexp.MustCompile(`^[a-z]/[A-Za-z0-9_-]{1,64}$`)
	safeUpload = regexp.MustCompile(`^[a-f0-9]{32}$`)
)

// NewLocal returns the local backend on dir (created if missing); base
// prefixes its URLs ("" for paths on this server).
func NewLocal(dir, base string, signer *Signer) (*Local, error) {
	for _, d := range []string{dir, filepath.Join(dir, "uploads")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("objects.local.dir %s: %w", dir, err)
		}
	}
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return &Local{dir: dir, base: base, signer: signer}, nil
}

func (l *Local) path(key string) (string, error) {
	if !safeKey.MatchString(key) {
		return "", fmt.Errorf("key %q: %w", key, ErrNoSuchKey)
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

func (l *Local) uploadDir(id string) (string, error) {
	if !safeUpload.MatchString(id) {
		return "", fmt.Errorf("upload %q: %w", id, ErrNoSuchKey)
	}
	return filepath.Join(l.dir, "uploads", id), nil
}

// writeFile writes r to path through a temporary file and a rename, so a
// reader never sees half a file.
func writeFile(path string, r io.Reader, size int64) (md5hex string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	h := md5.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return "", err
	}
	if size >= 0 && n != size {
		return "", fmt.Errorf("got %d bytes, expected %d", n, size)
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Put implements Storage.
func (l *Local) Put(_ context.Context, key string, r io.Reader, size int64, _ string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if _, err := writeFile(p, r, size); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Open implements Storage.
func (l *Local) Open(_ context.Context, key string, off, length int64) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open %s: %w", key, ErrNoSuchKey)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if length < 0 {
		return f, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, length), f}, nil
}

// Delete implements Storage.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Initiate implements Storage: the upload is a directory of parts.
func (l *Local) Initiate(_ context.Context, key, _ string) (string, error) {
	if _, err := l.path(key); err != nil {
		return "", err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	d, _ := l.uploadDir(id)
	if err := os.MkdirAll(d, 0o750); err != nil {
		return "", fmt.Errorf("initiate %s: %w", key, err)
	}
	return id, nil
}

// PartURL implements Storage: a Nexo-signed PUT of /object/part.
func (l *Local) PartURL(_ context.Context, key, uploadID string, n int, exp time.Time) (string, error) {
	q := url.Values{"key": {key}, "upload_id": {uploadID}, "part_number": {strconv.Itoa(n)}}
	return l.base + l.signer.Sign("PUT", LocalPartPath, q, exp), nil
}

// PutPart stores one part sent to a URL from PartURL (already verified by
// the caller) and returns its ETag (MD5, as S3 does).
func (l *Local) PutPart(_ context.Context, key, uploadID string, n int, r io.Reader, size int64) (string, error) {
	if _, err := l.path(key); err != nil {
		return "", err
	}
	d, err := l.uploadDir(uploadID)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("upload %s: %w", uploadID, ErrNoSuchKey)
	}
	etag, err := writeFile(filepath.Join(d, strconv.Itoa(n)), r, size)
	if err != nil {
		return "", fmt.Errorf("part %d of %s: %w", n, uploadID, err)
	}
	return etag, nil
}

// Parts implements Storage.
func (l *Local) Parts(_ context.Context, _, uploadID string) ([]Part, error) {
	d, err := l.uploadDir(uploadID)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("upload %s: %w", uploadID, ErrNoSuchKey)
	}
	if err != nil {
		return nil, err
	}
	var parts []Part
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || !e.Type().IsRegular() {
			continue // temporary files of parts being written
		}
		p, err := partOf(filepath.Join(d, e.Name()), n)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Number < parts[j].Number })
	return parts, nil
}

func partOf(path string, n int) (Part, error) {
	f, err := os.Open(path)
	if err != nil {
		return Part{}, err
	}
	defer f.Close()
	h := md5.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return Part{}, err
	}
	return Part{Number: n, ETag: hex.EncodeToString(h.Sum(nil)), Size: size}, nil
}

// Complete implements Storage: the parts are concatenated into the key.
func (l *Local) Complete(ctx context.Context, key, uploadID string, parts []Part) error {
	d, err := l.uploadDir(uploadID)
	if err != nil {
		return err
	}
	p, err := l.path(key)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		for _, part := range parts {
			f, err := os.Open(filepath.Join(d, strconv.Itoa(part.Number)))
			if err != nil {
				pw.CloseWithError(fmt.Errorf("part %d: %w", part.Number, ErrNoSuchKey))
				return
			}
			_, err = io.Copy(pw, f)
			_ = f.Close()
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	if _, err := writeFile(p, pr, -1); err != nil {
		_ = pr.CloseWithError(err)
		return fmt.Errorf("complete %s: %w", key, err)
	}
	return l.Abort(ctx, key, uploadID)
}

// Abort implements Storage.
func (l *Local) Abort(_ context.Context, _, uploadID string) error {
	d, err := l.uploadDir(uploadID)
	if err != nil {
		return nil
	}
	if err := os.RemoveAll(d); err != nil {
		return fmt.Errorf("abort %s: %w", uploadID, err)
	}
	return nil
}

// URL implements Storage: a Nexo-signed GET of /object/file.
func (l *Local) URL(_ context.Context, key string, d Download, exp time.Time) (string, error) {
	q := url.Values{"key": {key}, "name": {d.Name}, "type": {d.ContentType}}
	return l.base + l.signer.Sign("GET", LocalFilePath, q, exp), nil
}

// Signer returns the signer of the local backend's URLs.
func (l *Local) Signer() *Signer { return l.signer }
