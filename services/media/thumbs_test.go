package media_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"testing"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// jpegWithOrientation is a w×h JPEG carrying an EXIF orientation tag.
func jpegWithOrientation(t *testing.T, w, h int, orientation uint16) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		for y := 0; y < h; y++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var enc bytes.Buffer
	if err := jpeg.Encode(&enc, img, nil); err != nil {
		t.Fatal(err)
	}
	// APP1 "Exif": a little-endian TIFF header and one IFD entry, 0x0112
	// (Orientation), SHORT, count 1.
	var tiff bytes.Buffer
	tiff.WriteString("II*\x00")
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(8))
	_ = binary.Write(&tiff, binary.LittleEndian, uint16(1))
	_ = binary.Write(&tiff, binary.LittleEndian, []uint16{0x0112, 3})
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(1))
	_ = binary.Write(&tiff, binary.LittleEndian, []uint16{orientation, 0})
	_ = binary.Write(&tiff, binary.LittleEndian, uint32(0))
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	var out bytes.Buffer
	out.Write(enc.Bytes()[:2]) // SOI
	out.Write([]byte{0xFF, 0xE1})
	_ = binary.Write(&out, binary.BigEndian, uint16(len(payload)+2))
	out.Write(payload)
	out.Write(enc.Bytes()[2:])
	return out.Bytes()
}

func TestThumbnailOrientationAndSize(t *testing.T) {
	backends(t, func(c *configs.Objects) { c.ThumbnailPx = 100 }, func(t *testing.T, e *env) {
		ctx := context.Background()
		// 400×200 stored, orientation 6 (rotate 90° clockwise to show): the
		// thumbnail is upright, 50×100.
		o, err := upload(e, "alice", "portrait.jpg", "image/jpeg", jpegWithOrientation(t, 400, 200, 6))
		if err != nil {
			t.Fatal(err)
		}
		if o.Width != 400 || o.Height != 200 || o.ContentType != "image/jpeg" {
			t.Fatalf("object %+v", o)
		}
		u, err := e.svc.URL(ctx, "alice", o.ObjectID, "thumbnail")
		if err != nil {
			t.Fatal(err)
		}
		status, body, _ := e.fetch(t, u.URL)
		if status != 200 {
			t.Fatalf("GET thumbnail: %d", status)
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(body))
		if err != nil || format != "jpeg" || cfg.Width != 50 || cfg.Height != 100 {
			t.Fatalf("thumbnail %s %d×%d (%v), want jpeg 50×100", format, cfg.Width, cfg.Height, err)
		}
		got, _ := e.repo.Get(ctx, o.ObjectID)
		if got.Thumb != domain.ThumbReady {
			t.Fatalf("thumb state %s", got.Thumb)
		}
		// A file has no thumbnail.
		f, err := upload(e, "alice", "a.txt", "", []byte("text file"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.URL(ctx, "alice", f.ObjectID, "thumbnail"); !isKind(err, domain.ErrObjectNotFound) {
			t.Fatalf("thumbnail of a text file: %v", err)
		}
	})
}

func TestPerTypeLimits(t *testing.T) {
	backends(t, func(c *configs.Objects) { c.MaxImageBytes = 2048 }, func(t *testing.T, e *env) {
		big := pngBytes(t, 300, 300)
		if len(big) <= 2048 {
			big = append(big, make([]byte, 4096)...) // trailing bytes: still a PNG to the sniffer
		}
		if _, err := upload(e, "alice", "a.png", "", big); !isKind(err, domain.ErrObjectTooLarge) {
			t.Fatalf("image over max_image_bytes: %v", err)
		}
		if _, err := upload(e, "alice", "a.bin", "", make([]byte, 4096)); err != nil {
			t.Fatalf("a file of the same size: %v", err)
		}
		if keys := e.stored(t); len(keys) != 1 {
			t.Fatalf("stored %v, want the one file", keys)
		}
	})
}
