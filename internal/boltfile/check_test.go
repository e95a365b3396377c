package boltfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// newDB writes a bbolt file of a few hundred KiB and returns its path and
// page size.
func newDB(t *testing.T) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			for j := 0; j < 50; j++ {
				if err := b.Put([]byte{byte(i), byte(j)}, bytes.Repeat([]byte{byte(j)}, 300)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ps := db.Info().PageSize
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path, ps
}

// overwrite writes b at offset into the file.
func overwrite(t *testing.T, path string, offset int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	garbage := bytes.Repeat([]byte{0xA5}, 128)
	cases := []struct {
		name   string
		damage func(t *testing.T, path string, pageSize int)
		want   string // "" passes; otherwise in the error, which wraps ErrDamaged
	}{
		{"intact", func(*testing.T, string, int) {}, ""},
		{"missing", func(t *testing.T, path string, _ int) { os.Remove(path) }, ""},
		{"empty", func(t *testing.T, path string, _ int) { os.Truncate(path, 0) }, ""},
		{"cut to 64 KiB", func(t *testing.T, path string, _ int) { os.Truncate(path, 65536) }, "cut short"},
		{"cut inside the second meta page", func(t *testing.T, path string, ps int) { os.Truncate(path, int64(ps)+40) }, "less than its two meta pages"},
		{"cut inside the first page", func(t *testing.T, path string, _ int) { os.Truncate(path, 50) }, "no valid meta page"},
		{"first meta garbled", func(t *testing.T, path string, _ int) { overwrite(t, path, 16, garbage) }, ""},
		{"second meta garbled", func(t *testing.T, path string, ps int) { overwrite(t, path, int64(ps)+16, garbage) }, ""},
		{"both metas garbled", func(t *testing.T, path string, ps int) {
			overwrite(t, path, 16, garbage)
			overwrite(t, path, int64(ps)+16, garbage)
		}, "no valid meta page"},
		{"first meta garbled and file cut", func(t *testing.T, path string, ps int) {
			overwrite(t, path, 16, garbage)
			os.Truncate(path, 65536)
		}, "cut short"},
		{"not a bbolt file", func(t *testing.T, path string, _ int) {
			os.WriteFile(path, bytes.Repeat([]byte("not a database\n"), 1000), 0o600)
		}, "not a bbolt meta page"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, ps := newDB(t)
			tc.damage(t, path, ps)
			err := Check(path)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				// What Check lets through, bbolt opens and reads.
				db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
				if err != nil {
					t.Fatalf("Check passed a file bbolt cannot open: %v", err)
				}
				defer db.Close()
				if err := db.View(func(tx *bolt.Tx) error {
					for err := range tx.Check() {
						return err
					}
					return nil
				}); err != nil {
					t.Fatalf("Check passed a damaged file: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Check: %v; want ErrDamaged naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}

func TestCheckReportsOtherErrorsAsTheyAre(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	path, _ := newDB(t)
	os.Chmod(path, 0)
	if err := Check(path); err == nil || errors.Is(err, ErrDamaged) {
		t.Fatalf("Check of an unreadable file: %v, want an error that is not ErrDamaged", err)
	}
}
