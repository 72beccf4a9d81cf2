package privacy

import (
	"archive/zip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// Media reads the bytes of the objects an export carries (media.Service).
// OpenObject does no access check: the export decides which objects the
// user may have. An unknown or incomplete object, or one whose bytes are
// missing in the backend, is domain.ErrObjectNotFound; the caller closes
// the reader.
type Media interface {
	OpenObject(ctx context.Context, objectID string) (domain.Object, io.ReadCloser, error)
}

// Export formats (GET /user/export?format=).
const (
	FormatJSON = "json"
	FormatZIP  = "zip"
)

// CheckExportFormat returns the export format a request names: "" is
// FormatJSON; anything but json and zip is bad_request.
func CheckExportFormat(format string) (string, error) {
	switch format {
	case "", FormatJSON:
		return FormatJSON, nil
	case FormatZIP:
		return FormatZIP, nil
	}
	return "", domain.BadField("format", "must be json or zip")
}

// MissingJSON is media/missing.json of a ZIP export: the objects that
// messages of the export carry but whose bytes could not be found.
type MissingJSON struct {
	ObjectIDs []string `json:"object_ids"`
}

// ExportZip writes userID's data to w as a ZIP archive, streamed:
//
//   - export.json: exactly what Export writes;
//   - media/<object_id>/<name>: the original bytes of every object carried
//     by an exported message that the user may read (its status normal,
//     as export.json shows it), and of the user's avatar when the avatar
//     is an object of theirs, each object once; name is the object's file
//     name made safe for a path (thumbnails are not included);
//   - media/missing.json (MissingJSON), only when some object's bytes are
//     gone: those objects are listed there instead of failing the export.
//
// Without Deps.Media (uploads off) the archive holds export.json alone.
// Memory stays constant in the size of the history and of the objects
// (bytes are copied through one buffer); it grows only with the number of
// distinct objects, by their IDs, so that each is written once. An
// unknown user is domain.ErrUserNotFound before anything is written; any
// other error after the first byte ends the stream without the ZIP's
// central directory, which a reader detects.
func (s *Service) ExportZip(ctx context.Context, userID string, w io.Writer) error {
	zw := zip.NewWriter(w)
	f, err := zw.CreateHeader(&zip.FileHeader{Name: "export.json", Method: zip.Deflate, Modified: time.Now()})
	if err != nil {
		return err
	}
	objs := objectSet{seen: map[string]struct{}{}}
	u, err := s.export(ctx, userID, f, func(m *domain.Message) {
		if m.Status == domain.StatusNormal || m.Status == "" {
			objs.add(chat.ObjectIDOf(m))
		}
	})
	if err != nil {
		return err
	}
	if s.d.Media != nil {
		buf := make([]byte, 32<<10)
		var missing []string
		zipOne := func(id, owner string) error {
			ok, err := s.zipObject(ctx, zw, id, owner, buf)
			if err != nil {
				return err
			}
			if !ok {
				missing = append(missing, id)
			}
			return nil
		}
		for _, id := range objs.ids {
			if err := zipOne(id, ""); err != nil {
				return err
			}
		}
		if isObjectID(u.Avatar) && !objs.has(u.Avatar) {
			if err := zipOne(u.Avatar, u.ID); err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			f, err := zw.CreateHeader(&zip.FileHeader{Name: "media/missing.json", Method: zip.Deflate, Modified: time.Now()})
			if err != nil {
				return err
			}
			if err := json.NewEncoder(f).Encode(MissingJSON{ObjectIDs: missing}); err != nil {
				return err
			}
		}
	}
	return zw.Close()
}

// zipObject copies one object into the archive as media/<id>/<name>; it
// reports false when the object or its bytes are missing. With owner set,
// an object of someone else is left out (true): a profile's avatar field
// may name any object.
func (s *Service) zipObject(ctx context.Context, zw *zip.Writer, id, owner string, buf []byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	o, r, err := s.d.Media.OpenObject(ctx, id)
	if errors.Is(err, domain.ErrObjectNotFound) {
		s.d.Log.Warn("export: object missing", "object_id", id, "err", err)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open object %s: %w", id, err)
	}
	defer r.Close()
	if owner != "" && o.OwnerID != owner {
		return true, nil
	}
	// Pictures, sound and video are compressed already: stored as they
	// are, they cost no CPU; anything else is deflated.
	method := zip.Deflate
	if t := o.ContentType; strings.HasPrefix(t, "image/") || strings.HasPrefix(t, "audio/") || strings.HasPrefix(t, "video/") {
		method = zip.Store
	}
	f, err := zw.CreateHeader(&zip.FileHeader{Name: "media/" + id + "/" + safeName(o.Name), Method: method,
		Modified: time.UnixMilli(o.CreatedAt)})
	if err != nil {
		return false, err
	}
	if _, err := io.CopyBuffer(f, r, buf); err != nil {
		return false, fmt.Errorf("copy object %s: %w", id, err)
	}
	return true, nil
}

// objectSet keeps the IDs of the objects to export, each once, in the
// order they were first met.
type objectSet struct {
	seen map[string]struct{}
	ids  []string
}

func (o *objectSet) add(id string) {
	if id == "" || o.has(id) {
		return
	}
	o.seen[id] = struct{}{}
	o.ids = append(o.ids, id)
}

func (o *objectSet) has(id string) bool {
	_, ok := o.seen[id]
	return ok
}

// isObjectID reports whether s has the shape of an object ID: "o" and 32
// lower-case hex characters.
func isObjectID(s string) bool {
	if len(s) != 33 || s[0] != 'o' || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s[1:])
	return err == nil
}

// safeName makes an object's file name safe as the last element of a path
// in an archive: separators, drive colons, control and format characters
// become "_"; a name left empty or of dots only becomes "file". Upload
// already refuses most of these; an archive is opened by many tools, so
// the name is checked again here.
func safeName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ':':
			return '_'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return '_'
		}
		return r
	}, strings.TrimSpace(name))
	if strings.Trim(name, ".") == "" {
		return "file"
	}
	return name
}
