package domain

import "errors"

// ObjectState is where an uploaded object is in its life.
type ObjectState string

const (
	// ObjectUploading: a multipart upload was initiated and not completed.
	ObjectUploading ObjectState = "uploading"
	// ObjectComplete: the bytes are stored, sniffed and checked.
	ObjectComplete ObjectState = "complete"
)

// ThumbState says whether an object has a thumbnail.
type ThumbState string

const (
	// ThumbNone: not an image the server makes thumbnails of.
	ThumbNone ThumbState = "none"
	// ThumbPending: a thumbnailable image whose thumbnail is not made yet.
	ThumbPending ThumbState = "pending"
	// ThumbReady: the thumbnail is stored.
	ThumbReady ThumbState = "ready"
	// ThumbFailed: the image could not be decoded; it has no thumbnail.
	ThumbFailed ThumbState = "failed"
)

// Object purposes: what an upload is for.
const (
	PurposeMessage = "message"
	PurposeAvatar  = "avatar"
)

// Object is one uploaded file. ID is public ("o" + 32 hex characters);
// Key is where its bytes live in the storage backend. Size is bytes,
// SHA256 lower-case hex, ContentType the sniffed type (never the
// client's), Width/Height pixels for images (0 otherwise), CreatedAt Unix
// milliseconds.
type Object struct {
	ID          string
	OwnerID     string
	Purpose     string
	Key         string
	Name        string
	ContentType string
	Size        int64
	SHA256      string
	Width       int
	Height      int
	State       ObjectState
	Thumb       ThumbState
	UploadID    string // the backend's multipart upload ID while uploading
	PartSize    int64  // multipart: the size of every part but the last
	CreatedAt   int64
}

// HasThumbnail reports whether a thumbnail exists or will be made.
func (o *Object) HasThumbnail() bool { return o.Thumb == ThumbReady || o.Thumb == ThumbPending }

// ObjectRef is one message's reference to an object, kept so access to the
// object can be decided by the visibility of the messages that carry it.
type ObjectRef struct {
	ObjectID       string
	ConversationID string
	Seq            int64
	ServerMsgID    string
}

// Object errors (docs/media.md, docs/errors.md).
var (
	// ErrObjectNotFound: no such object (or multipart upload).
	ErrObjectNotFound = errors.New("object not found")
	// ErrUploadNotFound: no such multipart upload, or not the caller's.
	ErrUploadNotFound = errors.New("upload not found")
	// ErrObjectAccessDenied: the caller is neither the owner nor can see a
	// message that references the object.
	ErrObjectAccessDenied = errors.New("object access denied")
	// ErrURLInvalid: a signed object URL was altered or is not for this object.
	ErrURLInvalid = errors.New("object url signature invalid")
	// ErrURLExpired: a signed object URL's expiry has passed.
	ErrURLExpired = errors.New("object url expired")
	// ErrObjectTypeMismatch: the bytes are not what the client declared,
	// or not what the message type needs (a 102 must be an image).
	ErrObjectTypeMismatch = errors.New("object type mismatch")
	// ErrObjectTypeRefused: active content (HTML, SVG, XML with markup)
	// is never stored.
	ErrObjectTypeRefused = errors.New("object type refused")
	// ErrImageTooLarge: an image's dimensions exceed objects.max_image_pixels.
	ErrImageTooLarge = errors.New("image dimensions too large")
	// ErrObjectNameInvalid: a file name with control characters or path
	// separators.
	ErrObjectNameInvalid = errors.New("object name invalid")
	// ErrObjectTooLarge: over objects.max_direct_bytes, objects.max_bytes
	// or the type's maximum.
	ErrObjectTooLarge = errors.New("object too large")
	// ErrQuotaExceeded: the upload would take the owner past
	// objects.user_quota_bytes.
	ErrQuotaExceeded = errors.New("object quota exceeded")
	// ErrObjectIncomplete: the object's upload is not complete.
	ErrObjectIncomplete = errors.New("object incomplete")
	// ErrPartsMismatch: a multipart completion whose parts do not match
	// what was uploaded.
	ErrPartsMismatch = errors.New("multipart parts mismatch")
)
