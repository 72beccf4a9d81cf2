package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/disintegration/imaging"

	"github.com/nexo-im/nexo/domain"
)

// thumbQueue bounds the objects waiting for a thumbnail in one process;
// past it an object waits for the cleaner's pass to requeue it.
const thumbQueue = 1024

// Thumbnailer is the background stage that makes thumbnails: objects
// enter when their upload completes; Run works them off with
// objects.thumb_workers goroutines. An object whose process died before
// its thumbnail is requeued by the cleaner, and GET /object/url of a
// thumbnail makes a pending one at once, so the work is idempotent.
type Thumbnailer struct {
	s     *Service
	queue chan domain.Object
	mu    sync.Mutex // one make per object at a time
	busy  map[string]chan struct{}
}

func newThumbnailer(s *Service) *Thumbnailer {
	return &Thumbnailer{s: s, queue: make(chan domain.Object, thumbQueue), busy: map[string]chan struct{}{}}
}

func (t *Thumbnailer) enqueue(o domain.Object) {
	if o.Thumb != domain.ThumbPending {
		return
	}
	select {
	case t.queue <- o:
	default: // full: the cleaner requeues it
	}
}

// Run makes thumbnails until ctx ends.
func (t *Thumbnailer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range max(1, t.s.cfg.ThumbWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case o := <-t.queue:
					if _, err := t.make(ctx, o); err != nil && ctx.Err() == nil {
						t.s.log.Warn("thumbnail", "object_id", o.ID, "err", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// make makes o's thumbnail and records the outcome: ready, or failed for an
// image that does not decode (a transient storage error leaves it pending).
func (t *Thumbnailer) make(ctx context.Context, o domain.Object) (domain.ThumbState, error) {
	t.mu.Lock()
	if ch, ok := t.busy[o.ID]; ok {
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return domain.ThumbPending, ctx.Err()
		}
		cur, err := t.s.repo.Get(ctx, o.ID)
		return cur.Thumb, err
	}
	ch := make(chan struct{})
	t.busy[o.ID] = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.busy, o.ID)
		t.mu.Unlock()
		close(ch)
	}()

	start := time.Now()
	state, err := t.render(ctx, o)
	if err != nil && state == domain.ThumbPending {
		return state, err
	}
	t.s.metrics.thumbLatency.Observe(time.Since(start).Seconds())
	if err2 := t.s.repo.SetThumb(ctx, o.ID, state); err2 != nil {
		return domain.ThumbPending, err2
	}
	// The cleaner may have deleted the object meanwhile: leave no
	// thumbnail of it behind.
	if _, err2 := t.s.repo.Get(ctx, o.ID); errors.Is(err2, domain.ErrObjectNotFound) {
		_ = t.s.store.Delete(ctx, thumbKey(o.ID))
		return domain.ThumbNone, err2
	}
	return state, err
}

func (t *Thumbnailer) render(ctx context.Context, o domain.Object) (domain.ThumbState, error) {
	r, err := t.s.store.Open(ctx, o.Key, 0, -1)
	if err != nil {
		return domain.ThumbPending, err
	}
	defer r.Close()
	// The pixel guard again, from the header, before anything is decoded.
	if o.Width <= 0 || o.Height <= 0 || int64(o.Width)*int64(o.Height) > t.s.cfg.MaxImagePixels {
		return domain.ThumbFailed, fmt.Errorf("object %s: %d×%d is not a decodable size", o.ID, o.Width, o.Height)
	}
	img, err := imaging.Decode(r, imaging.AutoOrientation(true))
	if err != nil {
		return domain.ThumbFailed, fmt.Errorf("decode %s: %w", o.ID, err)
	}
	px := t.s.cfg.ThumbnailPx
	var th image.Image = img
	if b := img.Bounds(); b.Dx() > px || b.Dy() > px {
		th = imaging.Fit(img, px, px, imaging.Lanczos)
	}
	var buf bytes.Buffer
	if thumbType(o.ContentType) == "image/png" {
		err = png.Encode(&buf, th)
	} else {
		err = jpeg.Encode(&buf, th, &jpeg.Options{Quality: 82})
	}
	if err != nil {
		return domain.ThumbFailed, fmt.Errorf("encode thumbnail of %s: %w", o.ID, err)
	}
	if err := t.s.store.Put(ctx, thumbKey(o.ID), &buf, int64(buf.Len()), thumbType(o.ContentType)); err != nil {
		return domain.ThumbPending, err
	}
	return domain.ThumbReady, nil
}

// thumbType is a thumbnail's type: PNG for PNG and GIF (they may be
// transparent), JPEG otherwise.
func thumbType(contentType string) string {
	if contentType == "image/png" || contentType == "image/gif" {
		return "image/png"
	}
	return "image/jpeg"
}

func thumbName(name, contentType string) string {
	ext := ".jpg"
	if thumbType(contentType) == "image/png" {
		ext = ".png"
	}
	return strings.TrimSuffix(name, path.Ext(name)) + ".thumb" + ext
}
