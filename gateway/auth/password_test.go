package auth_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/auth"
)

func TestPasswords(t *testing.T) {
	p, err := auth.NewPasswords(bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("密", 128) // 384 bytes: far beyond bcrypt's 72
	tests := []struct {
		name, stored, given string
		want                error
	}{
		{"match", "correct horse", "correct horse", nil},
		{"wrong", "correct horse", "correct horsE", domain.ErrBadCredentials},
		{"long match", long, long, nil},
		// Differs only after byte 72: plain bcrypt would accept it.
		{"long differs late", long, long[:len(long)-3] + "x", domain.ErrBadCredentials},
		{"empty given", "correct horse", "", domain.ErrBadCredentials},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := p.Hash(tc.stored)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(h, tc.stored) || !strings.HasPrefix(h, "$2a$04$") {
				t.Fatalf("hash %q: not a cost-4 bcrypt hash", h)
			}
			if err := p.Check(h, tc.given); !errors.Is(err, tc.want) {
				t.Fatalf("check: got %v, want %v", err, tc.want)
			}
		})
	}
	if err := p.Check("", "anything"); !errors.Is(err, domain.ErrBadCredentials) {
		t.Fatalf("unknown user: got %v, want ErrBadCredentials", err)
	}
	if _, err := auth.NewPasswords(3); err == nil {
		t.Fatal("cost 3: want an error")
	}
}

// BenchmarkPasswordCheck measures one login's password check at the
// default cost (auth.bcrypt_cost = 10): the CPU price of every login and of
// every failed attempt.
func BenchmarkPasswordCheck(b *testing.B) {
	p, err := auth.NewPasswords(10)
	if err != nil {
		b.Fatal(err)
	}
	h, err := p.Hash("correct horse battery staple")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := p.Check(h, "correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}
