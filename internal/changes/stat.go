package changes

import "golang.org/x/sys/unix"

// keyOf is the stat cache key of st.
func keyOf(st *unix.Stat_t) statKey {
	return statKey{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		ino:   st.Ino,
		mode:  uint32(st.Mode),
	}
}
