//go:build !linux

package changes

// watcher is not available here: every look examines every file (the stat
// cache still spares the reads).
type watcher struct{ broken, full bool }

func newWatcher() *watcher                                     { return nil }
func (w *watcher) add(path, rel string)                        {}
func (w *watcher) remove(rel string)                           {}
func (w *watcher) drain(dirty map[string]map[string]bool) bool { return false }
func (w *watcher) close()                                      {}
