// Package api is the HTTP API kit every route table uses: strict binding
// of JSON bodies and frames, the success and error envelopes (the error's
// reason, err_code and status come from wire.Public, the one mapping), the
// request id, and adapters from a service operation to a route or a
// WebSocket request. It imports no other part of the gateway but wire, ws
// and auth.
package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
)

// Validator is implemented by request bodies that check themselves after
// decoding; Validate returns a domain.BadField error naming the field.
type Validator interface {
	Validate() error
}

// BindJSON decodes the request body into dst strictly and validates it.
// Every failure is a *wire.Error whose detail names the problem:
// body_too_long when the body exceeds maxBytes (http.max_body_bytes);
// unsupported_media_type when a non-empty body is not sent as
// application/json (CheckContentType); bad_request for an empty body or one
// that is not a JSON object, malformed JSON (invalid UTF-8 and lone
// surrogates included), a key that appears twice in one object, a field of
// the wrong type, an unknown field or a case variant of a known one (names
// match exactly: a typo must not be silently ignored), data after the
// object, or whatever dst.Validate refuses (missing or over-long fields).
// Nothing is decoded partially into use: callers act only on a nil error.
func BindJSON(c *app.RequestContext, maxBytes int, dst any) error {
	body := c.Request.Body()
	if len(body) > maxBytes {
		return bodyTooLong(len(body), maxBytes)
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := CheckContentType(string(c.Request.Header.ContentType())); err != nil {
			return err
		}
	}
	return DecodeJSON(body, maxBytes, dst)
}

// CheckContentType accepts the Content-Type of a JSON body:
// application/json, in any letter case, with an optional charset that must
// be utf-8. Anything else, a missing header included (curl -d sends
// application/x-www-form-urlencoded, and a browser form can post text/plain
// cross-site without a preflight), is unsupported_media_type (HTTP 415).
func CheckContentType(header string) error {
	if header == "" {
		return wire.NewError(wire.ReasonUnsupportedMediaType, "Content-Type is missing; send Content-Type: application/json")
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return wire.NewError(wire.ReasonUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not application/json", header))
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return wire.NewError(wire.ReasonUnsupportedMediaType, fmt.Sprintf("Content-Type %q: only charset=utf-8 is accepted", header))
		}
	}
	return nil
}

func bodyTooLong(n, maxBytes int) error {
	return wire.NewError(wire.ReasonBodyTooLong, fmt.Sprintf("body is %d bytes; the limit is %d", n, maxBytes))
}

// strict are the decoding rules of every client JSON body and frame:
// object member names match struct fields exactly (no case folding), an
// unknown member is an error, and the decoder's defaults refuse duplicate
// names in any object at any depth and invalid UTF-8 (lone surrogates
// included). Free-form objects (maps, raw values) may hold names that
// differ only in case: there each name is its own key, nothing is folded.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))

// DecodeJSON is BindJSON for a body already in hand (a WebSocket frame's
// data): the same strict decoding, validation and errors, without the
// Content-Type check (a frame has none).
func DecodeJSON(body []byte, maxBytes int, dst any) error {
	if len(body) > maxBytes {
		return bodyTooLong(len(body), maxBytes)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return domain.BadField("body", "must be a JSON object")
	}
	if err := json.Unmarshal(trimmed, dst, strict); err != nil {
		return decodeError(err, reflect.TypeOf(dst))
	}
	if v, ok := dst.(Validator); ok {
		return v.Validate()
	}
	return nil
}

// decodeError turns a decoding error into a bad_request naming the field
// (as a dotted path: content.text, seqs.3) or the byte offset. No decoder
// text about Go types reaches the client.
func decodeError(err error, dst reflect.Type) error {
	var syntax *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syntax):
		field := fieldPath(syntax.JSONPointer)
		switch {
		case errors.Is(err, jsontext.ErrDuplicateName):
			return domain.BadField(field, "appears twice in one object (duplicate keys are refused)")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return domain.BadField("body", "is not valid JSON (it ends early)")
		case syntax.JSONPointer == "" && strings.Contains(syntax.Err.Error(), "after top-level value"):
			return domain.BadField("body", "must hold one JSON object and nothing after it")
		}
		msg := strings.TrimPrefix(syntax.Err.Error(), "jsontext: ")
		if field != "body" {
			return domain.BadField("body", "is not valid JSON (at byte %d, in %s: %s)", syntax.ByteOffset, field, msg)
		}
		return domain.BadField("body", "is not valid JSON (at byte %d: %s)", syntax.ByteOffset, msg)
	case errors.As(err, &sem):
		field := fieldPath(sem.JSONPointer)
		if errors.Is(err, json.ErrUnknownName) {
			if known, ok := caseVariant(dst, sem.JSONPointer); ok {
				return domain.BadField(field, "is not a known field (names are case-sensitive; did you mean %s?)", known)
			}
			return domain.BadField(field, "is not a known field")
		}
		if sem.JSONPointer == "" {
			return domain.BadField("body", "must be a JSON object")
		}
		return domain.BadField(field, "must be %s, not %s", kindName(sem.GoType), jsonKindName(sem.JSONKind))
	}
	return domain.BadField("body", "is not valid JSON")
}

// fieldPath turns a JSON pointer (/content/text) into the dotted field
// name details use (content.text); the empty pointer is "body".
func fieldPath(p jsontext.Pointer) string {
	if p == "" {
		return "body"
	}
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	return strings.Join(parts, ".")
}

// jsonKindName names a JSON kind for a type-mismatch detail.
func jsonKindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "another type"
}

// caseVariant reports the field name that the last token of p differs from
// only in letter case, following p's earlier tokens through the struct
// fields of t.
func caseVariant(t reflect.Type, p jsontext.Pointer) (string, bool) {
	var toks []string
	for tok := range p.Tokens() {
		toks = append(toks, tok)
	}
	for i, tok := range toks {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil {
			return "", false
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
			continue
		case reflect.Struct:
		default:
			return "", false
		}
		last := i == len(toks)-1
		var next reflect.Type
		for j := range t.NumField() {
			f := t.Field(j)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if last && name != tok && strings.EqualFold(name, tok) {
				return name, true
			}
			if name == tok {
				next = f.Type
			}
		}
		t = next
	}
	return "", false
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

// WriteOK answers 200 with data in the success envelope.
func WriteOK(c *app.RequestContext, data any) {
	c.JSON(200, wire.OK(data))
}

// WriteError answers err in the error envelope with the HTTP status of its
// row in the error table. What the client sees is decided by wire.Public
// (the one place for both transports): a server-side failure's cause is
// logged with the request id and answered without detail, so internal
// messages never reach clients. Every error envelope carries the request id
// as data.request_id (the X-Request-Id header repeats it); too_many_requests
// also sets Retry-After (whole seconds, rounded up) and data.retry_after_ms.
func WriteError(ctx context.Context, c *app.RequestContext, logger *slog.Logger, err error) {
	we, hidden := wire.Public(err)
	id := RequestID(c)
	if hidden {
		logger.ErrorContext(ctx, "request failed", "method", string(c.Method()), "path", string(c.Path()),
			"request_id", id, "err", err)
	}
	if we.RetryAfter > 0 {
		secs := int64((we.RetryAfter + time.Second - 1) / time.Second)
		c.Response.Header.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	c.AbortWithStatusJSON(we.HTTPStatus, wire.Fail(we.WithRequestID(id)))
}

// RequestID returns the id of the request c is serving (the X-Request-Id
// response header the gateway's first middleware set), or "" outside a
// request. Middleware that runs outside the handler's ctx (an access log)
// reads it here; code with the handler's ctx can use wire.RequestIDFrom(ctx).
func RequestID(c *app.RequestContext) string {
	return string(c.Response.Header.Peek(wire.RequestIDHeader))
}
