package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteFileModes: the embedded database's directory is 0700 and its
// files 0600, also when the file existed with a looser mode (issue 13 item
// 16).
func TestSQLiteFileModes(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "nexo.db")
	db, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil { // writes: the -wal and -shm files appear
		t.Fatal(err)
	}
	check := func(p string, want os.FileMode) {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(p), got, want)
		}
	}
	check(dir, 0o700)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		check(p, 0o600)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A file left readable by an older version is tightened on open.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check(path, 0o600)
}
