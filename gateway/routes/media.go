package routes

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/url"
	"strconv"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/services/media"
)

// UploadLimiter counts one user's uploads, shared by every instance
// (limits.Uploads): nil when allowed, else too_many_requests.
type UploadLimiter interface {
	AllowUpload(ctx context.Context, userID string) error
}

// Media serves the object routes (docs/media.md).
type Media struct {
	svc     *media.Service
	local   *media.Local // nil unless objects.backend is local
	limit   UploadLimiter
	maxBody int
	log     *slog.Logger
}

// NewMedia returns the object routes; local is the local backend when it
// is the one in use (its signed URLs are served here), limit may be nil.
func NewMedia(svc *media.Service, local *media.Local, limit UploadLimiter, maxBody int, log *slog.Logger) *Media {
	return &Media{svc: svc, local: local, limit: limit, maxBody: maxBody, log: log}
}

// Register mounts POST /object/upload, POST /object/multipart/initiate,
// .../complete, .../abort, GET /object/multipart/parts, GET /object/url,
// GET /object/info (authenticated) and, for the local backend, the signed
// GET /object/file and PUT /object/part (no token: the signature is the
// authority).
func (m *Media) Register(r HTTP) {
	r.Route("POST", "/object/upload", m.upload, true)
	r.Route("POST", "/object/multipart/initiate", api.JSON(m.maxBody, m.log, func(ctx context.Context, caller string, req media.InitiateRequest) (media.UploadJSON, error) {
		if err := m.allow(ctx, caller); err != nil {
			return media.UploadJSON{}, err
		}
		return m.svc.Initiate(ctx, caller, req)
	}), true)
	r.Route("POST", "/object/multipart/complete", api.JSON(m.maxBody, m.log, m.svc.Complete), true)
	r.Route("POST", "/object/multipart/abort", api.JSON(m.maxBody, m.log, func(ctx context.Context, caller string, req media.AbortRequest) (struct{}, error) {
		return struct{}{}, m.svc.Abort(ctx, caller, req.UploadID)
	}), true)
	r.Route("GET", "/object/multipart/parts", m.query(func(ctx context.Context, caller string, c *app.RequestContext) (any, error) {
		return m.svc.Parts(ctx, caller, string(c.Query("upload_id")))
	}), true)
	r.Route("GET", "/object/url", m.query(func(ctx context.Context, caller string, c *app.RequestContext) (any, error) {
		return m.svc.URL(ctx, caller, string(c.Query("object_id")), string(c.Query("variant")))
	}), true)
	r.Route("GET", "/object/info", m.query(func(ctx context.Context, caller string, c *app.RequestContext) (any, error) {
		return m.svc.Get(ctx, caller, string(c.Query("object_id")))
	}), true)
	if m.local != nil {
		r.Route("GET", media.LocalFilePath, m.file, false)
		r.Route("PUT", media.LocalPartPath, m.part, false)
	}
}

func (m *Media) allow(ctx context.Context, caller string) error {
	if m.limit == nil {
		return nil
	}
	return m.limit.AllowUpload(ctx, caller)
}

func (m *Media) query(do func(ctx context.Context, caller string, c *app.RequestContext) (any, error)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		claims, _ := auth.ClaimsOf(c)
		res, err := do(ctx, claims.UserID, c)
		if err != nil {
			api.WriteError(ctx, c, m.log, err)
			return
		}
		api.WriteOK(c, res)
	}
}

// upload is POST /object/upload: multipart/form-data with the field file
// and an optional purpose.
func (m *Media) upload(ctx context.Context, c *app.RequestContext) {
	claims, _ := auth.ClaimsOf(c)
	res, err := func() (media.ObjectJSON, error) {
		ct, _, _ := mime.ParseMediaType(string(c.ContentType()))
		if ct != "multipart/form-data" {
			return media.ObjectJSON{}, wire.NewError(wire.ReasonUnsupportedMediaType, "send the file as multipart/form-data with the field file")
		}
		if err := m.allow(ctx, claims.UserID); err != nil {
			return media.ObjectJSON{}, err
		}
		fh, err := c.FormFile("file")
		if err != nil {
			return media.ObjectJSON{}, domain.BadField("file", "is required (a multipart/form-data file field)")
		}
		f, err := fh.Open()
		if err != nil {
			return media.ObjectJSON{}, domain.BadField("file", "could not be read")
		}
		defer f.Close()
		return m.svc.Upload(ctx, claims.UserID, media.UploadRequest{
			Name: fh.Filename, ContentType: fh.Header.Get("Content-Type"), Purpose: string(c.FormValue("purpose")),
			Size: fh.Size, Body: f,
		})
	}()
	if err != nil {
		api.WriteError(ctx, c, m.log, err)
		return
	}
	api.WriteOK(c, res)
}

func signedQuery(c *app.RequestContext) url.Values {
	q, _ := url.ParseQuery(string(c.URI().QueryString()))
	return q
}

// file is GET /object/file, the local backend's signed download: always an
// attachment, never sniffed, never run as a document.
func (m *Media) file(ctx context.Context, c *app.RequestContext) {
	q := signedQuery(c)
	if err := m.local.Signer().Verify("GET", media.LocalFilePath, q); err != nil {
		api.WriteError(ctx, c, m.log, err)
		return
	}
	r, err := m.local.Open(ctx, q.Get("key"), 0, -1)
	if errors.Is(err, media.ErrNoSuchKey) {
		api.WriteError(ctx, c, m.log, domain.NewError(domain.ErrObjectNotFound, "the object no longer exists"))
		return
	}
	if err != nil {
		api.WriteError(ctx, c, m.log, err)
		return
	}
	ct := q.Get("type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Response.Header.Set("Content-Type", ct)
	c.Response.Header.Set("Content-Disposition", media.AttachmentHeader(q.Get("name")))
	c.Response.Header.Set("X-Content-Type-Options", "nosniff")
	c.Response.Header.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	c.Response.Header.Set("Cache-Control", "private, max-age=300")
	c.SetBodyStream(r, -1)
}

// part is PUT /object/part, the local backend's signed part upload; it
// answers the part's ETag in the ETag header and in data.etag.
func (m *Media) part(ctx context.Context, c *app.RequestContext) {
	q := signedQuery(c)
	if err := m.local.Signer().Verify("PUT", media.LocalPartPath, q); err != nil {
		api.WriteError(ctx, c, m.log, err)
		return
	}
	n, err := strconv.Atoi(q.Get("part_number"))
	if err != nil || n < 1 || n > 10000 {
		api.WriteError(ctx, c, m.log, domain.BadField("part_number", "must be 1..10000"))
		return
	}
	body := c.Request.Body()
	etag, err := m.local.PutPart(ctx, q.Get("key"), q.Get("upload_id"), n, bytesReader(body), int64(len(body)))
	if errors.Is(err, media.ErrNoSuchKey) {
		api.WriteError(ctx, c, m.log, domain.NewError(domain.ErrUploadNotFound, "the upload was completed, aborted or cleaned up"))
		return
	}
	if err != nil {
		api.WriteError(ctx, c, m.log, err)
		return
	}
	c.Response.Header.Set("ETag", `"`+etag+`"`)
	api.WriteOK(c, map[string]any{"part_number": n, "etag": etag})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
