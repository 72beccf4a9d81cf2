package main

// The chat mix: --picture-share sends that share of messages as pictures
// (msg_type 102 referencing an object the sender uploaded at setup), and
// --action-share turns that share of sends into actions (edit, reaction,
// delete for everyone, in rotation) on the sender's own earlier saved text
// messages. docs/bench/README.md, "Pictures and actions".

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"sync"
)

// registerMix adds the mix's flags to run's.
func registerMix(fs *flag.FlagSet, o *options) {
	fs.Float64Var(&o.PictureShare, "picture-share", 0, "single/group: share of messages (0-1) sent as pictures (102) referencing a small PNG each sender uploads at setup (POST /object/upload; the server needs objects.backend, --inprocess sets one up); receivers check the pushed object metadata")
	fs.Float64Var(&o.ActionShare, "action-share", 0, "single/group: share of sends (0-1) that are actions on one of the sender's own earlier saved text messages — edit (1106), reaction add (1109), delete for everyone (1108) in rotation; every action's notice (1601-1603) must reach every member connection exactly once")
}

// checkMix validates the mix's flags.
func (o *options) checkMix() []error {
	var errs []error
	if o.PictureShare < 0 || o.PictureShare > 1 || o.ActionShare < 0 || o.ActionShare > 1 {
		errs = append(errs, errors.New("--picture-share and --action-share must be in [0, 1]"))
	}
	if (o.PictureShare > 0 || o.ActionShare > 0) && o.Scenario != "single" && o.Scenario != "group" {
		errs = append(errs, errors.New("--picture-share and --action-share need --scenario single or group"))
	}
	return errs
}

// picture is the object a sender's pictures reference, as the upload
// answered it: receivers check the pushed metadata against it.
type picture struct {
	objectID    string
	size        int64
	contentType string
}

// wireContent is the part of a pushed or pulled message's content the mix
// checks: a picture's object reference and a notice's custom payload.
type wireContent struct {
	Image  *imageRef       `json:"image"`
	Custom json.RawMessage `json:"custom"`
}

// imageRef is a 102's content.image when it is an object reference (a URL
// string leaves it nil and counts as a mismatch).
type imageRef struct {
	ObjectID    string `json:"object_id"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// UnmarshalJSON accepts the object reference and ignores a URL string.
func (r *imageRef) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	type plain imageRef
	return json.Unmarshal(b, (*plain)(r))
}

// benchPNG is the picture every sender uploads: 32×32 pixels, one colour
// per user, so no two uploads have the same sha256.
func benchPNG(seed int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	c := color.RGBA{uint8(seed), uint8(seed >> 8), uint8(seed >> 16), 255}
	for y := range 32 {
		for x := range 32 {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// uploadPicture uploads benchPNG(seed) as token's user (POST
// /object/upload, field file, image/png) and returns the object.
func uploadPicture(ctx context.Context, a *api, token string, seed int) (*picture, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="bench.png"`)
	h.Set("Content-Type", "image/png")
	part, err := w.CreatePart(h)
	if err != nil {
		return nil, err
	}
	_, _ = part.Write(benchPNG(seed))
	_ = w.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/object/upload", &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, &apiError{Reason: "transport", Detail: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, &apiError{Status: resp.StatusCode, Reason: "bad_response"}
	}
	if env.ErrCode != 0 {
		return nil, &apiError{Status: resp.StatusCode, Code: env.ErrCode, Reason: env.ErrMsg}
	}
	var obj struct {
		ObjectID    string `json:"object_id"`
		Size        int64  `json:"size"`
		ContentType string `json:"content_type"`
	}
	if err := json.Unmarshal(env.Data, &obj); err != nil || obj.ObjectID == "" {
		return nil, &apiError{Status: resp.StatusCode, Reason: "bad_response"}
	}
	return &picture{objectID: obj.ObjectID, size: obj.Size, contentType: obj.ContentType}, nil
}

// setupMix gives every sender its mix and, with --picture-share, uploads
// one picture per sending connection.
func (t *topology) setupMix(ctx context.Context) error {
	o := t.o
	if o.PictureShare <= 0 && o.ActionShare <= 0 {
		return nil
	}
	pics := map[*conn]*picture{}
	if o.PictureShare > 0 {
		var conns []*conn
		for _, s := range t.senders {
			conns = append(conns, s.conns...)
		}
		var mu sync.Mutex
		err := parallel(ctx, len(conns), o.SetupConcurrency, func(ctx context.Context, i int) error {
			p, err := uploadPicture(ctx, t.api, conns[i].token, conns[i].idx+1)
			if err != nil {
				return fmt.Errorf("upload the picture of %s: %w", conns[i].user, err)
			}
			mu.Lock()
			defer mu.Unlock()
			pics[conns[i]] = p
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, s := range t.senders {
		// A random phase per sender spreads the pictures and actions of
		// the senders over time instead of every tenth send of all at once,
		// and a random start of the rotation mixes the kinds even when each
		// sender acts only once or twice.
		s.mix = &senderMix{pictureShare: o.PictureShare, actionShare: o.ActionShare, pics: pics,
			picAcc: rand.Float64(), actAcc: rand.Float64(), rotation: rand.IntN(len(actionKinds))}
	}
	return nil
}

// senderMix decides, send by send, what a sender's next send is. Only its
// sender's goroutine uses it.
type senderMix struct {
	pictureShare, actionShare float64
	picAcc, actAcc            float64 // accumulated shares: one send is due per whole unit
	pics                      map[*conn]*picture
	rotation                  int
}

// choose decides the next send of c: an action (sent here; acted true),
// or a message, a picture when pic is set. Shares accumulate per send, so
// over n sends exactly ⌊n·share⌋ (give or take one) are of each kind; an
// action that finds no saved message of c to act on is owed to the next
// send and a message goes instead.
func (m *senderMix) choose(clk *clock, rec *recorder, c *conn, to *target, due int64, slot chan struct{}) (pic *picture, acted bool) {
	if m.actionShare > 0 {
		m.actAcc += m.actionShare
		if m.actAcc >= 1 {
			kind := actionKinds[m.rotation%len(actionKinds)]
			if rec.sendAction(clk, c, to, kind, due, slot) {
				m.actAcc--
				m.rotation++
				return nil, true
			}
			m.actAcc = 1 // owed: try again at the next send
		}
	}
	if m.pictureShare > 0 {
		m.picAcc += m.pictureShare
		if m.picAcc >= 1 {
			m.picAcc--
			return m.pics[c], false
		}
	}
	return nil, false
}

// pictureChecks count what receivers found in pushed pictures.
type pictureChecks struct {
	sent, received, mismatches int64
}

// setPicture marks a message registered by newMsg as a picture (never a
// search probe: it has no text).
func (r *recorder) setPicture(clientMsgID string, p *picture) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.lookup(clientMsgID); m != nil {
		m.pic, m.probe = p, ""
		r.pics.sent++
	}
}

// checkPicture checks a picture shown to a receiver carries its object's
// reference with the metadata the upload answered. Called with r.mu held.
func (r *recorder) checkPicture(m *msgRec, msg *message) {
	img := msg.Content.Image
	if msg.MsgType != msgTypePicture || img == nil || img.ObjectID != m.pic.objectID ||
		img.Size != m.pic.size || img.ContentType != m.pic.contentType {
		r.pics.mismatches++
		return
	}
	r.pics.received++
}
