package gateway_test

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/nexo-im/nexo/gateway/wire"
)

// TestErrorsDocMatchesTable fails when docs/errors.md misses a row of
// wire.Table(), gives it another code or status, or lists a reason the
// table does not have.
func TestErrorsDocMatchesTable(t *testing.T) {
	raw, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[wire.Reason]wire.Code{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		reason := strings.TrimSpace(cells[1])
		code, err1 := strconv.Atoi(strings.TrimSpace(cells[2]))
		status, err2 := strconv.Atoi(strings.TrimSpace(cells[3]))
		if !strings.HasPrefix(reason, "`") || err1 != nil || err2 != nil {
			continue // header, separator or another table
		}
		r := wire.Reason(strings.Trim(reason, "`"))
		if _, dup := documented[r]; dup {
			t.Errorf("docs/errors.md lists %s twice", r)
		}
		documented[r] = wire.Code{Reason: r, ErrCode: code, HTTPStatus: status}
	}
	table := wire.Table()
	for _, row := range table {
		got, ok := documented[row.Reason]
		switch {
		case !ok:
			t.Errorf("docs/errors.md misses %s (%d, %d)", row.Reason, row.ErrCode, row.HTTPStatus)
		case got != row:
			t.Errorf("docs/errors.md has %s as %d/%d, the table says %d/%d", row.Reason, got.ErrCode, got.HTTPStatus, row.ErrCode, row.HTTPStatus)
		}
		delete(documented, row.Reason)
	}
	for r := range documented {
		t.Errorf("docs/errors.md lists %s, which is not in wire.Table()", r)
	}
	if len(table) == 0 {
		t.Fatal("empty error table")
	}
}

// jsonNames lists the JSON field names of a struct type, in order.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestErrorFrameShapeDocumented keeps docs/errors.md and docs/protocol.md
// equal to the code: both state the WebSocket error data as the fields of
// wire.ErrorData (reason, detail, client_msg_id), neither states an older
// shape, and protocol.md's frame table lists every field of wire.Response
// (ts included).
func TestErrorFrameShapeDocumented(t *testing.T) {
	names := jsonNames(wire.ErrorData{})
	shape := `{"` + strings.Join(names, `", "`) + `"}`
	old := `{"` + strings.Join(names[:len(names)-1], `", "`) + `"}`
	for _, doc := range []string{"../docs/errors.md", "../docs/protocol.md"} {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		if !strings.Contains(text, shape) {
			t.Errorf("%s does not state the error data as %s", doc, shape)
		}
		if strings.Contains(text, old) {
			t.Errorf("%s still states the error data as %s (the code sends %s)", doc, old, shape)
		}
	}
	raw, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range jsonNames(wire.Response{}) {
		if !strings.Contains(string(raw), "| `"+name+"` |") && !strings.Contains(string(raw), "`, `"+name+"` |") {
			t.Errorf("docs/protocol.md's frame table lacks the field %s", name)
		}
	}
}
