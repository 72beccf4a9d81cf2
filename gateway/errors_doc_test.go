package gateway_test

import (
	"os"
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
