package account

import "testing"

func TestIsCommonPassword(t *testing.T) {
	for _, p := range []string{"12345678", "password1", "iloveyou", "qwertyuiop", "PassWord1", "sunshine"} {
		if !isCommonPassword(p) {
			t.Errorf("%q should be refused as common", p)
		}
	}
	for _, p := range []string{"correct horse", "plum-tart-9", "nexo-bench-pw", "Tr0ub4dor&3x!"} {
		if isCommonPassword(p) {
			t.Errorf("%q is not a common password", p)
		}
	}
	if n := len(commonPasswords()); n != commonPasswordCount {
		t.Fatalf("list has %d entries, want %d", n, commonPasswordCount)
	}
}
