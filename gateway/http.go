package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/gateway/wire"
)

// Validator is implemented by request bodies that check themselves after
// decoding; Validate returns a *wire.Error (see BadField) naming the field.
type Validator interface {
	Validate() error
}

// BindJSON decodes the request body into dst strictly and validates it.
// Every failure is a *wire.Error whose detail names the problem:
// body_too_long when the body exceeds maxBytes (http.max_body_bytes);
// bad_request for an empty body or one that is not a JSON object, malformed
// JSON, a field of the wrong type, an unknown field (a typo must not be
// silently ignored), data after the object, or whatever dst.Validate
// refuses (missing or over-long fields). Nothing is decoded partially into
// use: callers act only on a nil error.
func BindJSON(c *app.RequestContext, maxBytes int, dst any) error {
	return DecodeJSON(c.Request.Body(), maxBytes, dst)
}

// DecodeJSON is BindJSON for a body already in hand (a WebSocket frame's
// data): the same strict decoding, validation and errors.
func DecodeJSON(body []byte, maxBytes int, dst any) error {
	if len(body) > maxBytes {
		return wire.NewError(wire.ReasonBodyTooLong, fmt.Sprintf("body is %d bytes; the limit is %d", len(body), maxBytes))
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return BadField("body", "must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadField("body", "must hold one JSON object and nothing after it")
	}
	if v, ok := dst.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// decodeError turns an encoding/json error into a bad_request naming the
// field or the byte offset.
func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return BadField("body", "is not valid JSON (at byte %d: %v)", syntax.Offset, syntax)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadField("body", "is not valid JSON (it ends early)")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return BadField("body", "must be a JSON object")
		}
		return BadField(typ.Field, "must be %s, not %s", kindName(typ.Type), typ.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return BadField(strings.Trim(name, `"`), "is not a known field")
	}
	return BadField("body", "%v", err)
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return t.String()
}

// BadField returns a bad_request error whose detail is "<field> <message>".
func BadField(field, format string, args ...any) *wire.Error {
	return wire.NewError(wire.ReasonBadRequest, field+" "+fmt.Sprintf(format, args...))
}

// checkLen checks that v has min..max characters (Unicode code points, as
// VARCHAR counts them). min 1 makes the field required.
func checkLen(field, v string, min, max int) error {
	n := utf8.RuneCountInString(v)
	switch {
	case n == 0 && min > 0:
		return BadField(field, "is required")
	case n < min || n > max:
		return BadField(field, "must be %d–%d characters (got %d)", min, max, n)
	}
	return nil
}

// WriteOK answers 200 with data in the success envelope.
func WriteOK(c *app.RequestContext, data any) {
	c.JSON(200, wire.OK(data))
}

// WriteError answers err in the error envelope with the HTTP status of its
// row in the error table (wire.FromError). A *wire.Error keeps its detail;
// a server-side failure (5xx) mapped from any other error is logged with
// its cause and answered without detail, so internal messages never reach
// clients.
func WriteError(ctx context.Context, c *app.RequestContext, logger *slog.Logger, err error) {
	var we *wire.Error
	if !errors.As(err, &we) {
		we = wire.FromError(err)
		if we.HTTPStatus >= 500 {
			logger.ErrorContext(ctx, "request failed", "method", string(c.Method()), "path", string(c.Path()), "err", err)
			we = &wire.Error{Code: we.Code}
		}
	}
	c.AbortWithStatusJSON(we.HTTPStatus, wire.Fail(we))
}
