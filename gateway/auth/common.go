package auth

import (
	"strings"
	"sync"

	"github.com/trustelem/zxcvbn/frequency"
)

// CommonPasswordCount is how many of the most common passwords are
// refused: the top of zxcvbn's ranked password list (github.com/trustelem/
// zxcvbn, MIT; the list is zxcvbn's, drawn from leaked password corpora),
// which ships inside that Go module.
const CommonPasswordCount = 10_000

var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	list := frequency.FrequencyLists["passwords"]
	set := make(map[string]struct{}, CommonPasswordCount)
	for _, p := range list[:min(CommonPasswordCount, len(list))] {
		set[p] = struct{}{}
	}
	return set
})

// IsCommonPassword reports whether password, in any letter case, is one of
// the CommonPasswordCount most common passwords (e.g. "12345678",
// "password1", "iloveyou"). The list is lower case, so "PassWord1" counts
// too; it is loaded on first use.
func IsCommonPassword(password string) bool {
	_, ok := commonPasswords()[strings.ToLower(password)]
	return ok
}
