package ws

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/hertz-contrib/websocket"
)

// wsTransport is the transport of a real connection: the library's Conn,
// plus WriteTexts, which frames a batch of text messages itself and hands
// them to the network connection in one Write. The library writes every
// message with its own Write (one system call each) and offers no way to
// batch; its reader still owns the read side, and control frames still go
// through WriteControl. Server frames are unmasked and never compressed
// (the upgrader does not negotiate permessage-deflate), so the framing is
// the fixed header of RFC 6455 §5.2 followed by the payload.
type wsTransport struct{ *websocket.Conn }

// coalesceMax is the largest batch copied into one buffer; a larger text
// goes through the library's own writer, which streams it in pieces.
const coalesceMax = 64 << 10

var writeBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// WriteTexts writes each text as one final text frame, in order, with one
// Write to the network connection for all of them.
func (t wsTransport) WriteTexts(texts [][]byte, deadline time.Time) error {
	if len(texts) == 1 && len(texts[0]) > coalesceMax {
		if err := t.SetWriteDeadline(deadline); err != nil {
			return err
		}
		return t.WriteMessage(websocket.TextMessage, texts[0])
	}
	bp := writeBufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, text := range texts {
		if len(text) > coalesceMax {
			// Flush what is framed so far, then let the library stream
			// the big one; order is kept because this goroutine is the
			// only writer.
			if err := t.writeRaw(buf, deadline); err != nil {
				putWriteBuf(bp, buf)
				return err
			}
			buf = buf[:0]
			if err := t.SetWriteDeadline(deadline); err != nil {
				putWriteBuf(bp, buf)
				return err
			}
			if err := t.WriteMessage(websocket.TextMessage, text); err != nil {
				putWriteBuf(bp, buf)
				return err
			}
			continue
		}
		buf = appendTextFrame(buf, text)
	}
	err := t.writeRaw(buf, deadline)
	putWriteBuf(bp, buf)
	return err
}

func (t wsTransport) writeRaw(buf []byte, deadline time.Time) error {
	if len(buf) == 0 {
		return nil
	}
	nc := t.NetConn()
	if err := nc.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := nc.Write(buf)
	return err
}

func putWriteBuf(bp *[]byte, buf []byte) {
	if cap(buf) > 2*coalesceMax {
		return // a burst's buffer is not kept
	}
	*bp = buf[:0]
	writeBufPool.Put(bp)
}

// appendTextFrame appends one unmasked, final text frame holding text.
func appendTextFrame(buf, text []byte) []byte {
	const finText = 0x80 | websocket.TextMessage
	n := len(text)
	switch {
	case n < 126:
		buf = append(buf, finText, byte(n))
	case n <= 0xFFFF:
		buf = append(buf, finText, 126)
		buf = binary.BigEndian.AppendUint16(buf, uint16(n))
	default:
		buf = append(buf, finText, 127)
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	return append(buf, text...)
}
