package media

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// Repo stores objects and their references (store.ObjectRepo).
type Repo interface {
	Create(ctx context.Context, o *domain.Object) error
	Get(ctx context.Context, id string) (domain.Object, error)
	Complete(ctx context.Context, o *domain.Object) error
	SetThumb(ctx context.Context, id string, t domain.ThumbState) error
	Touch(ctx context.Context, id string, at int64) error
	Delete(ctx context.Context, id string) error
	UsedBytes(ctx context.Context, owner string) (int64, error)
	TotalBytes(ctx context.Context) (int64, error)
	AddRef(ctx context.Context, ref domain.ObjectRef) error
	Refs(ctx context.Context, objectID string, limit int) ([]domain.ObjectRef, error)
	InConversation(ctx context.Context, objectID, conversationID string) (bool, error)
	Orphans(ctx context.Context, before int64, limit int) ([]domain.Object, error)
	Uncarried(ctx context.Context, owner string, limit int) ([]domain.Object, error)
	PendingThumbs(ctx context.Context, before int64, limit int) ([]domain.Object, error)
}

// Messages reads messages under the caller's visibility rules
// (chat.Puller): a seq the caller may not see, or whose message was
// recalled, comes back without status "normal".
type Messages interface {
	PullBySeqs(ctx context.Context, userID, conversationID string, seqs []int64) (chat.PullResult, error)
}

// Service is the object service. Safe for concurrent use.
type Service struct {
	cfg     configs.Objects
	repo    Repo
	store   Storage
	msgs    Messages
	thumbs  *Thumbnailer
	metrics *metrics
	log     *slog.Logger
	now     func() time.Time
}

// Deps are the Service's dependencies.
type Deps struct {
	Config   configs.Objects
	Repo     Repo
	Storage  Storage
	Messages Messages
	Registry prometheus.Registerer // nil: metrics unregistered
	Log      *slog.Logger
	Now      func() time.Time // nil: time.Now
}

// NewService returns the object service and starts nothing: run its
// Thumbnailer (Thumbnails) and Cleaner as components.
func NewService(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	s := &Service{cfg: d.Config, repo: d.Repo, store: d.Storage, msgs: d.Messages, metrics: newMetrics(d.Registry), log: d.Log, now: d.Now}
	s.thumbs = newThumbnailer(s)
	return s
}

// Thumbnails is the background stage that makes thumbnails.
func (s *Service) Thumbnails() *Thumbnailer { return s.thumbs }

// Storage is the backend in use.
func (s *Service) Storage() Storage { return s.store }

// ObjectJSON describes an object on the wire (uploads, and the metadata a
// message carries): sizes in bytes, sha256 lower-case hex, width/height
// in pixels for images.
type ObjectJSON struct {
	ObjectID     string `json:"object_id"`
	Name         string `json:"name"`
	ContentType  string `json:"content_type"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	HasThumbnail bool   `json:"has_thumbnail"`
}

func toJSON(o *domain.Object) ObjectJSON {
	return ObjectJSON{ObjectID: o.ID, Name: o.Name, ContentType: o.ContentType, Size: o.Size, SHA256: o.SHA256,
		Width: o.Width, Height: o.Height, HasThumbnail: o.HasThumbnail()}
}

// newID returns a fresh object ID: "o" + 32 hex characters.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "o" + hex.EncodeToString(b[:])
}

func objectKey(id string) string { return "o/" + id[1:] }
func thumbKey(id string) string  { return "t/" + id[1:] }

// validObjectID checks the shape of a client's object_id.
func validObjectID(id string) bool {
	if len(id) != 33 || id[0] != 'o' {
		return false
	}
	_, err := hex.DecodeString(id[1:])
	return err == nil && strings.ToLower(id) == id
}

// limitFor is the most bytes an object of the content type's family may have.
func (s *Service) limitFor(contentType string) int64 {
	var l int64
	switch family(contentType) {
	case familyImage:
		l = s.cfg.MaxImageBytes
	case familyAudio:
		l = s.cfg.MaxAudioBytes
	case familyVideo:
		l = s.cfg.MaxVideoBytes
	}
	if l <= 0 || l > s.cfg.MaxBytes {
		return s.cfg.MaxBytes
	}
	return l
}

func (s *Service) checkSize(size int64, contentType string) error {
	if l := s.limitFor(contentType); size > l {
		return domain.NewError(domain.ErrObjectTooLarge, fmt.Sprintf("%d bytes; the limit for %s is %d", size, contentType, l))
	}
	return nil
}

// checkQuota refuses an upload of size bytes that would take owner past
// objects.user_quota_bytes.
func (s *Service) checkQuota(ctx context.Context, owner string, size int64) error {
	if s.cfg.UserQuotaBytes <= 0 {
		return nil
	}
	used, err := s.repo.UsedBytes(ctx, owner)
	if err != nil {
		return err
	}
	if used+size > s.cfg.UserQuotaBytes {
		return domain.NewError(domain.ErrQuotaExceeded, fmt.Sprintf("%d bytes stored + %d would pass the quota of %d", used, size, s.cfg.UserQuotaBytes))
	}
	return nil
}

func checkPurpose(p string) (string, error) {
	switch p {
	case "", domain.PurposeMessage:
		return domain.PurposeMessage, nil
	case domain.PurposeAvatar:
		return p, nil
	}
	return "", domain.BadField("purpose", "must be message or avatar")
}

// refuse counts a refusal by reason and returns err.
func (s *Service) refuse(err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		s.metrics.refusals.WithLabelValues(de.Kind.Error()).Inc()
	} else if errors.Is(err, domain.ErrInvalidArgument) {
		s.metrics.refusals.WithLabelValues(domain.ErrInvalidArgument.Error()).Inc()
	}
	return err
}

// UploadRequest is a direct upload (POST /object/upload): the file's bytes
// (Size of them) with the name and type the client gave.
type UploadRequest struct {
	Name        string
	ContentType string // the client's claim, checked against the bytes
	Purpose     string // message (default) or avatar
	Size        int64
	Body        io.Reader
}

// Upload stores a file of up to objects.max_direct_bytes and returns its
// metadata. Errors: object_too_large, quota_exceeded, object_name_invalid,
// object_type_refused, object_type_mismatch, image_too_large,
// bad_request (purpose); nothing is kept of a refused upload.
func (s *Service) Upload(ctx context.Context, owner string, req UploadRequest) (ObjectJSON, error) {
	o, err := s.upload(ctx, owner, req)
	if err != nil {
		return ObjectJSON{}, s.refuse(err)
	}
	s.metrics.uploads.WithLabelValues("direct").Inc()
	s.metrics.bytes.Add(float64(o.Size))
	return toJSON(&o), nil
}

func (s *Service) upload(ctx context.Context, owner string, req UploadRequest) (domain.Object, error) {
	purpose, err := checkPurpose(req.Purpose)
	if err != nil {
		return domain.Object{}, err
	}
	if req.Size > s.cfg.MaxDirectBytes {
		return domain.Object{}, domain.NewError(domain.ErrObjectTooLarge, fmt.Sprintf("%d bytes; a direct upload may have %d (objects.max_direct_bytes): use /object/multipart/initiate", req.Size, s.cfg.MaxDirectBytes))
	}
	if req.Size <= 0 {
		return domain.Object{}, domain.BadField("file", "must not be empty")
	}
	name, err := cleanName(req.Name)
	if err != nil {
		return domain.Object{}, err
	}
	head := make([]byte, min(req.Size, headBytes))
	if _, err := io.ReadFull(req.Body, head); err != nil {
		return domain.Object{}, domain.BadField("file", "could not be read: %v", err)
	}
	sn, err := inspect(head, declaredType(req.ContentType, name), s.cfg.MaxImagePixels)
	if err != nil {
		return domain.Object{}, err
	}
	if err := s.checkSize(req.Size, sn.ContentType); err != nil {
		return domain.Object{}, err
	}
	if err := s.checkQuota(ctx, owner, req.Size); err != nil {
		return domain.Object{}, err
	}
	o := domain.Object{ID: newID(), OwnerID: owner, Purpose: purpose, Name: name, ContentType: sn.ContentType,
		Size: req.Size, Width: sn.Width, Height: sn.Height, State: domain.ObjectComplete, Thumb: sn.Thumb, CreatedAt: s.now().UnixMilli()}
	o.Key = objectKey(o.ID)
	h := sha256.New()
	body := io.TeeReader(io.MultiReader(bytes.NewReader(head), req.Body), h)
	if err := s.store.Put(ctx, o.Key, body, req.Size, o.ContentType); err != nil {
		_ = s.store.Delete(context.WithoutCancel(ctx), o.Key)
		return domain.Object{}, err
	}
	o.SHA256 = hex.EncodeToString(h.Sum(nil))
	if err := s.repo.Create(ctx, &o); err != nil {
		_ = s.store.Delete(context.WithoutCancel(ctx), o.Key)
		return domain.Object{}, err
	}
	s.thumbs.enqueue(o)
	return o, nil
}

// access decides whether caller may read the object: its owner; anyone for
// an avatar; else a user to whom some message carrying it is visible and
// not recalled, under the same rules as a pull (a member who joined after
// it or left before it does not see it). domain.ErrObjectAccessDenied
// otherwise.
func (s *Service) access(ctx context.Context, caller string, o *domain.Object) error {
	if o.OwnerID == caller || o.Purpose == domain.PurposeAvatar {
		return nil
	}
	refs, err := s.repo.Refs(ctx, o.ID, 1000)
	if err != nil {
		return err
	}
	byConv := map[string][]int64{}
	for _, r := range refs {
		byConv[r.ConversationID] = append(byConv[r.ConversationID], r.Seq)
	}
	for conv, seqs := range byConv {
		res, err := s.msgs.PullBySeqs(ctx, caller, conv, seqs)
		if err != nil {
			if errors.Is(err, domain.ErrNotConversationMember) || errors.Is(err, domain.ErrNotGroupMember) ||
				errors.Is(err, domain.ErrMemberNotActive) || errors.Is(err, domain.ErrInvalidArgument) ||
				errors.Is(err, domain.ErrGroupNotFound) || errors.Is(err, domain.ErrUserNotFound) {
				// Not a party of that conversation: this message does not count.
				continue
			}
			return err
		}
		for _, m := range res.Messages {
			if m.Status == string(domain.StatusNormal) {
				return nil
			}
		}
	}
	return domain.NewError(domain.ErrObjectAccessDenied, "only the owner and users who can see a message carrying the object may read it")
}

// URLResult is a signed download URL and its expiry (Unix ms).
type URLResult struct {
	URL       string `json:"url"`
	ExpiresAt int64  `json:"expires_at"`
}

// Variants of GET /object/url.
const (
	VariantOriginal  = "original"
	VariantThumbnail = "thumbnail"
)

// URL returns a signed URL of the object's variant (original or
// thumbnail), valid for objects.url_ttl without a token, for that object
// and variant only. Errors: bad_request, object_not_found (also for a
// variant the object has not: a thumbnail of a non-image),
// object_incomplete, object_access_denied.
func (s *Service) URL(ctx context.Context, caller, objectID, variant string) (URLResult, error) {
	if variant == "" {
		variant = VariantOriginal
	}
	if variant != VariantOriginal && variant != VariantThumbnail {
		return URLResult{}, domain.BadField("variant", "must be original or thumbnail")
	}
	if !validObjectID(objectID) {
		return URLResult{}, domain.BadField("object_id", "must be an object ID (o + 32 hex characters)")
	}
	o, err := s.repo.Get(ctx, objectID)
	if err != nil {
		return URLResult{}, err
	}
	if err := s.access(ctx, caller, &o); err != nil {
		return URLResult{}, s.refuse(err)
	}
	if o.State != domain.ObjectComplete {
		return URLResult{}, domain.NewError(domain.ErrObjectIncomplete, "the upload is not completed")
	}
	key, d := o.Key, Download{Name: o.Name, ContentType: o.ContentType}
	if variant == VariantThumbnail {
		if o.Thumb == domain.ThumbPending {
			// The stage has not come to it yet: make it now (idempotent).
			if t, err := s.thumbs.make(ctx, o); err == nil {
				o.Thumb = t
			}
		}
		if o.Thumb != domain.ThumbReady {
			return URLResult{}, domain.NewError(domain.ErrObjectNotFound, "the object has no thumbnail")
		}
		key, d = thumbKey(o.ID), Download{Name: thumbName(o.Name, o.ContentType), ContentType: thumbType(o.ContentType)}
	}
	exp := s.now().Add(s.cfg.URLTTL)
	u, err := s.store.URL(ctx, key, d, exp)
	if err != nil {
		return URLResult{}, err
	}
	return URLResult{URL: u, ExpiresAt: exp.UnixMilli()}, nil
}

// Get returns the object's metadata to its owner or a user who may read it.
func (s *Service) Get(ctx context.Context, caller, objectID string) (ObjectJSON, error) {
	if !validObjectID(objectID) {
		return ObjectJSON{}, domain.BadField("object_id", "must be an object ID (o + 32 hex characters)")
	}
	o, err := s.repo.Get(ctx, objectID)
	if err != nil {
		return ObjectJSON{}, err
	}
	if err := s.access(ctx, caller, &o); err != nil {
		return ObjectJSON{}, s.refuse(err)
	}
	return toJSON(&o), nil
}

// OpenObject reads a complete object's original bytes, with no access
// check: the caller has decided the reader may have them (a data export
// reads the objects of the messages its user may read). It returns the
// object's metadata and a reader of its bytes, which the caller closes.
// A malformed ID, an unknown or incomplete object and bytes missing in the
// backend are all domain.ErrObjectNotFound (wrapped).
func (s *Service) OpenObject(ctx context.Context, objectID string) (domain.Object, io.ReadCloser, error) {
	if !validObjectID(objectID) {
		return domain.Object{}, nil, fmt.Errorf("object %q: %w", objectID, domain.ErrObjectNotFound)
	}
	o, err := s.repo.Get(ctx, objectID)
	if err != nil {
		return domain.Object{}, nil, err
	}
	if o.State != domain.ObjectComplete {
		return domain.Object{}, nil, fmt.Errorf("object %s is not complete: %w", objectID, domain.ErrObjectNotFound)
	}
	r, err := s.store.Open(ctx, o.Key, 0, -1)
	if errors.Is(err, ErrNoSuchKey) {
		return domain.Object{}, nil, fmt.Errorf("object %s: bytes missing: %w", objectID, domain.ErrObjectNotFound)
	}
	if err != nil {
		return domain.Object{}, nil, err
	}
	return o, r, nil
}
