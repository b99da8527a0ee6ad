package privdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// chownAway gives p to another user, or skips when this test is not root.
func chownAway(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	if err := os.Lchown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesHostileDirectories(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		plant  func(t *testing.T, dir string)
	}{
		{"symlink to a directory", Repair, func(t *testing.T, dir string) {
			if err := os.Symlink(t.TempDir(), dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"regular file", Repair, func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's directory", Repair, func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			chownAway(t, dir)
		}},
		{"group-writable", RefuseWritable, func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		}},
		{"world-writable", RefuseWritable, func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o707); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			tt.plant(t, dir)
			root, err := Open(dir, tt.policy)
			if !errors.Is(err, ErrUnsafe) {
				if root != nil {
					root.Close()
				}
				t.Fatalf("Open = %v, want ErrUnsafe", err)
			}
			var ue *UnsafeError
			if !errors.As(err, &ue) || ue.Path != dir {
				t.Errorf("error %v does not name %s", err, dir)
			}
		})
	}
}

func TestOpenCreatesAndRepairs(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		mode   fs.FileMode // 0: missing
	}{
		{"missing", RefuseWritable, 0},
		{"readable by others", RefuseWritable, 0o755},
		{"writable by others, repaired", Repair, 0o777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			if tt.mode != 0 {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			root, err := Open(dir, tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			root.Close()
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("mode %04o, want 0700", fi.Mode().Perm())
			}
		})
	}
}

func TestOpenExistingMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	if _, err := OpenExisting(dir, RefuseWritable); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenExisting = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenExisting created %s", dir)
	}
}

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	root, err := Open(dir, RefuseWritable)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.WriteFile(filepath.Join(dir, "real"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	f, st, err := OpenFile(root, "real", os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st.Size() != 1 {
		t.Errorf("size %d", st.Size())
	}
	for _, name := range []string{"link", "sub"} {
		if _, _, err := OpenFile(root, name, os.O_RDONLY); !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenFile(%s) = %v, want ErrUnsafe", name, err)
		}
	}
	if _, _, err := OpenFile(root, "missing", os.O_RDONLY|os.O_CREATE); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenFile(missing) = %v, want fs.ErrNotExist (never created)", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(dir, "real"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, _, err := OpenFile(root, "real", os.O_RDONLY); !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenFile of another user's file = %v", err)
		}
	}
}

func TestCheckOwner(t *testing.T) {
	fi, err := os.Lstat("/")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckOwner(fi)
	if os.Geteuid() == 0 && err != nil {
		t.Errorf("CheckOwner(/) as root = %v", err)
	}
	if os.Geteuid() != 0 && !errors.Is(err, ErrUnsafe) {
		t.Errorf("CheckOwner(/) = %v for uid %d", err, os.Geteuid())
	}
}
