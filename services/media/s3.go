package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"

	"github.com/nexo-im/nexo/configs"
)

// S3 stores objects in a bucket of any S3-compatible service through
// minio-go. Part and download URLs are the service's own presigned URLs.
type S3 struct {
	core   *minio.Core
	bucket string
	sse    encrypt.ServerSide // nil: none
}

var _ Storage = (*S3)(nil)

// NewS3 connects to the configured service and checks the bucket exists
// (creating it when cfg.CreateBucket).
func NewS3(ctx context.Context, cfg configs.ObjectsS3) (*S3, error) {
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.UseSSL, Region: cfg.Region, BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("objects.s3: %w", err)
	}
	s := &S3{core: core, bucket: cfg.Bucket}
	if cfg.SSE == "s3" {
		s.sse = encrypt.NewSSE()
	}
	ok, err := core.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("objects.s3: bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		if !cfg.CreateBucket {
			return nil, fmt.Errorf("objects.s3: bucket %s does not exist at %s (create it, or set objects.s3.create_bucket)", cfg.Bucket, cfg.Endpoint)
		}
		if err := core.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			return nil, fmt.Errorf("objects.s3: create bucket %s: %w", cfg.Bucket, err)
		}
	}
	return s, nil
}

// notFound maps the service's "no such" answers to ErrNoSuchKey.
func notFound(err error) error {
	if err == nil {
		return nil
	}
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NoSuchUpload", "NotFound":
		return fmt.Errorf("%w: %v", ErrNoSuchKey, err)
	}
	return err
}

// Put implements Storage.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	_, err := s.core.Client.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{
		ContentType: contentType, ServerSideEncryption: s.sse, DisableMultipart: size <= 64<<20,
	})
	if err != nil {
		return fmt.Errorf("s3 put %s: %w", key, err)
	}
	return nil
}

// Open implements Storage.
func (s *S3) Open(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	opts := minio.GetObjectOptions{}
	if off > 0 || length >= 0 {
		end := int64(0)
		if length >= 0 {
			end = off + length - 1
		}
		if err := opts.SetRange(off, end); err != nil {
			return nil, err
		}
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", key, notFound(err))
	}
	return body, nil
}

// Delete implements Storage.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := s.core.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil && !errors.Is(notFound(err), ErrNoSuchKey) {
		return fmt.Errorf("s3 delete %s: %w", key, err)
	}
	return nil
}

// Initiate implements Storage.
func (s *S3) Initiate(ctx context.Context, key, contentType string) (string, error) {
	id, err := s.core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{ContentType: contentType, ServerSideEncryption: s.sse})
	if err != nil {
		return "", fmt.Errorf("s3 initiate %s: %w", key, err)
	}
	return id, nil
}

// PartURL implements Storage: a presigned UploadPart.
func (s *S3) PartURL(ctx context.Context, key, uploadID string, n int, exp time.Time) (string, error) {
	q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {uploadID}}
	u, err := s.core.Presign(ctx, "PUT", s.bucket, key, max(time.Until(exp), time.Second), q)
	if err != nil {
		return "", fmt.Errorf("s3 presign part %d of %s: %w", n, key, err)
	}
	return u.String(), nil
}

// Parts implements Storage.
func (s *S3) Parts(ctx context.Context, key, uploadID string) ([]Part, error) {
	var out []Part
	marker := 0
	for {
		res, err := s.core.ListObjectParts(ctx, s.bucket, key, uploadID, marker, 1000)
		if err != nil {
			return nil, fmt.Errorf("s3 list parts of %s: %w", key, notFound(err))
		}
		for _, p := range res.ObjectParts {
			out = append(out, Part{Number: p.PartNumber, ETag: strings.Trim(p.ETag, `"`), Size: p.Size})
		}
		if !res.IsTruncated {
			return out, nil
		}
		marker = res.NextPartNumberMarker
	}
}

// Complete implements Storage.
func (s *S3) Complete(ctx context.Context, key, uploadID string, parts []Part) error {
	cp := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		cp[i] = minio.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	if _, err := s.core.CompleteMultipartUpload(ctx, s.bucket, key, uploadID, cp, minio.PutObjectOptions{ServerSideEncryption: s.sse}); err != nil {
		return fmt.Errorf("s3 complete %s: %w", key, notFound(err))
	}
	return nil
}

// Abort implements Storage.
func (s *S3) Abort(ctx context.Context, key, uploadID string) error {
	if err := s.core.AbortMultipartUpload(ctx, s.bucket, key, uploadID); err != nil && !errors.Is(notFound(err), ErrNoSuchKey) {
		return fmt.Errorf("s3 abort %s: %w", key, err)
	}
	return nil
}

// URL implements Storage: a presigned GET that makes the service answer
// with Content-Disposition: attachment and the sniffed type.
func (s *S3) URL(ctx context.Context, key string, d Download, exp time.Time) (string, error) {
	q := url.Values{
		"response-content-disposition": {AttachmentHeader(d.Name)},
		"response-content-type":        {d.ContentType},
	}
	u, err := s.core.Presign(ctx, "GET", s.bucket, key, max(time.Until(exp), time.Second), q)
	if err != nil {
		return "", fmt.Errorf("s3 presign %s: %w", key, err)
	}
	return u.String(), nil
}

// AttachmentHeader is the Content-Disposition of every download:
// attachment, with the name in RFC 6266/5987 form.
func AttachmentHeader(name string) string {
	if name == "" {
		name = "file"
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}
