package media

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"  // DecodeConfig and thumbnails of GIF
	_ "image/jpeg" // ... JPEG
	_ "image/png"  // ... PNG
	"mime"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
	_ "golang.org/x/image/webp" // ... WebP

	"github.com/nexo-im/nexo/domain"
)

// headBytes is how much of an object is read to sniff it and to read an
// image's header: mimetype needs 3 KiB; a JPEG's dimensions can follow
// EXIF and ICC segments of up to 64 KiB each.
const headBytes = 256 << 10

// Families of content types, for the per-type limits and the message types.
const (
	familyImage = "image"
	familyAudio = "audio"
	familyVideo = "video"
	familyOther = "other"
)

func family(contentType string) string {
	switch {
	case strings.HasPrefix(contentType, "image/"):
		return familyImage
	case strings.HasPrefix(contentType, "audio/"):
		return familyAudio
	case strings.HasPrefix(contentType, "video/"):
		return familyVideo
	}
	return familyOther
}

// activeTypes are documents a browser would run script from: never stored.
var activeTypes = []string{"text/html", "image/svg+xml", "application/xhtml+xml", "text/xml", "application/xml"}

func isActive(contentType string) bool {
	base, _, _ := mime.ParseMediaType(contentType)
	if base == "" {
		base = contentType
	}
	for _, t := range activeTypes {
		if base == t {
			return true
		}
	}
	return false
}

// thumbTypes are the image types thumbnails are made of.
var thumbTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// sniffed is what the server learned from an object's first bytes.
type sniffed struct {
	ContentType   string
	Width, Height int
	Thumb         domain.ThumbState
}

// declaredType is the type the client claims: its explicit type unless it
// is empty or application/octet-stream, else the one its name's extension
// implies ("" when neither says anything).
func declaredType(explicit, name string) string {
	if base, _, err := mime.ParseMediaType(explicit); err == nil && base != "application/octet-stream" {
		return base
	}
	if ext := strings.ToLower(path.Ext(name)); ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			base, _, _ := mime.ParseMediaType(t)
			return base
		}
	}
	return ""
}

// inspect sniffs head (an object's first bytes), never trusting declared:
// active content is ErrObjectTypeRefused; bytes of another family than an
// image, audio or video type the client declared are
// ErrObjectTypeMismatch; an image whose header declares more than
// maxPixels is ErrImageTooLarge (checked before anything is decoded).
func inspect(head []byte, declared string, maxPixels int64) (sniffed, error) {
	mt := mimetype.Detect(head)
	ct := mt.String()
	base, _, _ := mime.ParseMediaType(ct)
	if base == "" {
		base = ct
	}
	out := sniffed{ContentType: base, Thumb: domain.ThumbNone}
	for m := mt; m != nil; m = m.Parent() {
		if isActive(m.String()) {
			return out, domain.NewError(domain.ErrObjectTypeRefused, fmt.Sprintf("the file is %s: HTML, SVG and XML documents are never stored (zip them to send them)", base))
		}
	}
	if isActive(declared) {
		return out, domain.NewError(domain.ErrObjectTypeRefused, fmt.Sprintf("declared as %s: HTML, SVG and XML documents are never stored", declared))
	}
	if f := family(declared); f != familyOther && f != family(base) {
		return out, domain.NewError(domain.ErrObjectTypeMismatch, fmt.Sprintf("declared as %s but the bytes are %s", declared, base))
	}
	if family(base) == familyImage {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
		if err == nil {
			if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
				return out, domain.NewError(domain.ErrImageTooLarge, fmt.Sprintf("the image is %d×%d pixels; the limit is %d pixels (objects.max_image_pixels)", cfg.Width, cfg.Height, maxPixels))
			}
			out.Width, out.Height = cfg.Width, cfg.Height
			if thumbTypes[base] {
				out.Thumb = domain.ThumbPending
			}
		}
	}
	return out, nil
}

// maxNameLen bounds a file name (objects.name is VARCHAR(255)).
const maxNameLen = 255

// cleanName checks and tidies a client's file name: surrounding spaces are
// trimmed and an empty name becomes "file"; control and format characters
// (bidi overrides included), path separators and names of only dots are
// ErrObjectNameInvalid, as is a name over 255 characters.
func cleanName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "file", nil
	}
	bad := func(why string) error {
		return domain.NewError(domain.ErrObjectNameInvalid, "name "+why)
	}
	if !utf8.ValidString(name) {
		return "", bad("must be valid UTF-8")
	}
	if utf8.RuneCountInString(name) > maxNameLen {
		return "", bad(fmt.Sprintf("must be at most %d characters", maxNameLen))
	}
	for _, r := range name {
		switch {
		case r == '/' || r == '\\':
			return "", bad("must not contain / or \\ (a file name, not a path)")
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return "", bad(fmt.Sprintf("must not contain control or format characters (found U+%04X)", r))
		}
	}
	if strings.Trim(name, ".") == "" {
		return "", bad("must not be only dots")
	}
	return name, nil
}
