package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nexo-im/nexo/domain"
)

// maxParts is S3's limit on the parts of one upload.
const maxParts = 10000

// InitiateRequest is the body of POST /object/multipart/initiate: the
// file's name, its exact size in bytes and the type the client claims.
type InitiateRequest struct {
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
	Purpose     string `json:"purpose"`
}

// Validate implements api.Validator.
func (r *InitiateRequest) Validate() error {
	if r.Size <= 0 {
		return domain.BadField("size", "must be > 0 (bytes)")
	}
	if len(r.ContentType) > 128 {
		return domain.BadField("content_type", "must be at most 128 characters")
	}
	return nil
}

// PartURL is where one part goes: a PUT of its bytes to URL.
type PartURL struct {
	Number int    `json:"part_number"`
	URL    string `json:"url"`
}

// UploadJSON describes a multipart upload: its ID, the object it makes,
// the size of every part but the last (bytes), the parts already stored
// and an upload URL per missing part, valid until expires_at (Unix ms).
type UploadJSON struct {
	UploadID  string    `json:"upload_id"`
	ObjectID  string    `json:"object_id"`
	Size      int64     `json:"size"`
	PartSize  int64     `json:"part_size"`
	PartCount int       `json:"part_count"`
	Uploaded  []Part    `json:"uploaded"`
	Parts     []PartURL `json:"parts"`
	ExpiresAt int64     `json:"expires_at"`
}

func uploadIDOf(objectID string) string { return "u" + objectID[1:] }

// objectOfUpload maps an upload_id back to its object ("" when malformed).
func objectOfUpload(uploadID string) string {
	if len(uploadID) != 33 || uploadID[0] != 'u' {
		return ""
	}
	if id := "o" + uploadID[1:]; validObjectID(id) {
		return id
	}
	return ""
}

func partCount(size, partSize int64) int { return int((size + partSize - 1) / partSize) }

// Initiate starts a multipart upload of up to objects.max_bytes: the size
// and the claimed type are checked against the limits and the quota now,
// the bytes when it completes. Errors: bad_request, object_too_large,
// quota_exceeded, object_name_invalid, object_type_refused.
func (s *Service) Initiate(ctx context.Context, owner string, req InitiateRequest) (UploadJSON, error) {
	u, err := s.initiate(ctx, owner, req)
	return u, s.refuse(err)
}

func (s *Service) initiate(ctx context.Context, owner string, req InitiateRequest) (UploadJSON, error) {
	purpose, err := checkPurpose(req.Purpose)
	if err != nil {
		return UploadJSON{}, err
	}
	name, err := cleanName(req.Name)
	if err != nil {
		return UploadJSON{}, err
	}
	declared := declaredType(req.ContentType, name)
	if isActive(declared) {
		return UploadJSON{}, domain.NewError(domain.ErrObjectTypeRefused, fmt.Sprintf("declared as %s: HTML, SVG and XML documents are never stored", declared))
	}
	if req.Size > s.cfg.MaxBytes {
		return UploadJSON{}, domain.NewError(domain.ErrObjectTooLarge, fmt.Sprintf("%d bytes; the limit is %d (objects.max_bytes)", req.Size, s.cfg.MaxBytes))
	}
	if err := s.checkSize(req.Size, declared); err != nil {
		return UploadJSON{}, err
	}
	partSize := s.cfg.PartSize
	if partCount(req.Size, partSize) > maxParts {
		partSize = (req.Size + maxParts - 1) / maxParts
	}
	if err := s.checkQuota(ctx, owner, req.Size); err != nil {
		return UploadJSON{}, err
	}
	o := domain.Object{ID: newID(), OwnerID: owner, Purpose: purpose, Name: name, ContentType: declared,
		Size: req.Size, State: domain.ObjectUploading, Thumb: domain.ThumbNone, PartSize: partSize, CreatedAt: s.now().UnixMilli()}
	o.Key = objectKey(o.ID)
	if o.UploadID, err = s.store.Initiate(ctx, o.Key, "application/octet-stream"); err != nil {
		return UploadJSON{}, err
	}
	if err := s.repo.Create(ctx, &o); err != nil {
		_ = s.store.Abort(context.WithoutCancel(ctx), o.Key, o.UploadID)
		return UploadJSON{}, err
	}
	s.metrics.uploads.WithLabelValues("multipart_initiated").Inc()
	return s.describe(ctx, &o, nil)
}

// describe lists o's upload: stored parts and URLs for the missing ones.
func (s *Service) describe(ctx context.Context, o *domain.Object, stored []Part) (UploadJSON, error) {
	n := partCount(o.Size, o.PartSize)
	exp := s.now().Add(s.cfg.URLTTL)
	have := map[int]bool{}
	for _, p := range stored {
		have[p.Number] = true
	}
	out := UploadJSON{UploadID: uploadIDOf(o.ID), ObjectID: o.ID, Size: o.Size, PartSize: o.PartSize, PartCount: n,
		Uploaded: stored, Parts: []PartURL{}, ExpiresAt: exp.UnixMilli()}
	if out.Uploaded == nil {
		out.Uploaded = []Part{}
	}
	for i := 1; i <= n; i++ {
		if have[i] {
			continue
		}
		u, err := s.store.PartURL(ctx, o.Key, o.UploadID, i, exp)
		if err != nil {
			return UploadJSON{}, err
		}
		out.Parts = append(out.Parts, PartURL{Number: i, URL: u})
	}
	return out, nil
}

// upload returns the caller's upload in progress, or upload_not_found.
func (s *Service) uploadOf(ctx context.Context, owner, uploadID string) (domain.Object, error) {
	id := objectOfUpload(uploadID)
	if id == "" {
		return domain.Object{}, domain.BadField("upload_id", "must be an upload ID (u + 32 hex characters)")
	}
	o, err := s.repo.Get(ctx, id)
	if errors.Is(err, domain.ErrObjectNotFound) || err == nil && (o.OwnerID != owner || o.State != domain.ObjectUploading) {
		return domain.Object{}, domain.NewError(domain.ErrUploadNotFound, "no upload "+uploadID+" in progress of yours")
	}
	return o, err
}

// Parts lists what an upload has stored so far with fresh URLs for the
// missing parts: how a client that lost its connection resumes.
func (s *Service) Parts(ctx context.Context, owner, uploadID string) (UploadJSON, error) {
	o, err := s.uploadOf(ctx, owner, uploadID)
	if err != nil {
		return UploadJSON{}, err
	}
	stored, err := s.store.Parts(ctx, o.Key, o.UploadID)
	if err != nil {
		return UploadJSON{}, err
	}
	return s.describe(ctx, &o, stored)
}

// CompleteRequest is the body of POST /object/multipart/complete.
type CompleteRequest struct {
	UploadID string `json:"upload_id"`
	Parts    []Part `json:"parts"`
}

// Validate implements api.Validator.
func (r *CompleteRequest) Validate() error {
	if len(r.Parts) == 0 || len(r.Parts) > maxParts {
		return domain.BadField("parts", "must list 1–%d parts", maxParts)
	}
	return nil
}

// AbortRequest is the body of POST /object/multipart/abort.
type AbortRequest struct {
	UploadID string `json:"upload_id"`
}

// Validate implements api.Validator.
func (r *AbortRequest) Validate() error { return nil }

// Complete assembles an upload from its parts — all of them, in order,
// each the part size but the last, with the ETags the storage returned —
// then sniffs and checks the bytes like a direct upload. A refused file is
// deleted with its upload. Errors: upload_not_found, parts_mismatch and the
// errors of Upload.
func (s *Service) Complete(ctx context.Context, owner string, req CompleteRequest) (ObjectJSON, error) {
	o, err := s.complete(ctx, owner, req)
	if err != nil {
		return ObjectJSON{}, s.refuse(err)
	}
	s.metrics.uploads.WithLabelValues("multipart").Inc()
	s.metrics.bytes.Add(float64(o.Size))
	return toJSON(&o), nil
}

func (s *Service) complete(ctx context.Context, owner string, req CompleteRequest) (domain.Object, error) {
	o, err := s.uploadOf(ctx, owner, req.UploadID)
	if err != nil {
		return o, err
	}
	stored, err := s.store.Parts(ctx, o.Key, o.UploadID)
	if err != nil {
		return o, err
	}
	n := partCount(o.Size, o.PartSize)
	mismatch := func(format string, args ...any) error {
		return domain.NewError(domain.ErrPartsMismatch, fmt.Sprintf(format, args...))
	}
	if len(req.Parts) != n {
		return o, mismatch("the upload of %d bytes has %d parts of %d bytes; got %d", o.Size, n, o.PartSize, len(req.Parts))
	}
	byNum := map[int]Part{}
	for _, p := range stored {
		byNum[p.Number] = p
	}
	for i, p := range req.Parts {
		if p.Number != i+1 {
			return o, mismatch("parts must be listed 1..%d in order; parts.%d is %d", n, i, p.Number)
		}
		got, ok := byNum[p.Number]
		if !ok {
			return o, mismatch("part %d was not uploaded", p.Number)
		}
		if strings.Trim(p.ETag, `"`) != got.ETag {
			return o, mismatch("part %d: etag %q does not match the stored part", p.Number, p.ETag)
		}
		want := o.PartSize
		if p.Number == n {
			want = o.Size - int64(n-1)*o.PartSize
		}
		if got.Size != want {
			return o, mismatch("part %d has %d bytes; expected %d", p.Number, got.Size, want)
		}
	}
	parts := make([]Part, n)
	for i := range parts {
		parts[i] = byNum[i+1]
	}
	if err := s.store.Complete(ctx, o.Key, o.UploadID, parts); err != nil {
		return o, err
	}
	if err := s.checkStored(ctx, &o); err != nil {
		bg := context.WithoutCancel(ctx)
		_ = s.store.Delete(bg, o.Key)
		_ = s.repo.Delete(bg, o.ID)
		return o, err
	}
	if err := s.repo.Complete(ctx, &o); err != nil {
		return o, err
	}
	o.State = domain.ObjectComplete
	s.thumbs.enqueue(o)
	return o, nil
}

// checkStored sniffs and hashes an assembled object, filling o's content
// type, sha256, dimensions and thumbnail state.
func (s *Service) checkStored(ctx context.Context, o *domain.Object) error {
	r, err := s.store.Open(ctx, o.Key, 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	head := make([]byte, min(o.Size, headBytes))
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("read %s: %w", o.Key, err)
	}
	sn, err := inspect(head, o.ContentType, s.cfg.MaxImagePixels)
	if err != nil {
		return err
	}
	if err := s.checkSize(o.Size, sn.ContentType); err != nil {
		return err
	}
	h := sha256.New()
	h.Write(head)
	n, err := io.Copy(h, r)
	if err != nil {
		return fmt.Errorf("hash %s: %w", o.Key, err)
	}
	if int64(len(head))+n != o.Size {
		return domain.NewError(domain.ErrPartsMismatch, fmt.Sprintf("the assembled object has %d bytes; %d were declared", int64(len(head))+n, o.Size))
	}
	o.ContentType, o.Width, o.Height, o.Thumb = sn.ContentType, sn.Width, sn.Height, sn.Thumb
	o.SHA256 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// Abort discards an upload in progress and its parts.
func (s *Service) Abort(ctx context.Context, owner, uploadID string) error {
	o, err := s.uploadOf(ctx, owner, uploadID)
	if err != nil {
		return err
	}
	if err := s.store.Abort(ctx, o.Key, o.UploadID); err != nil {
		return err
	}
	return s.repo.Delete(ctx, o.ID)
}
