package bloblog

// SetHook installs a test hook called at each step boundary of a flush
// ("create", "append", "seal"); an error it returns stops the flush
// there, as a failure would.
func SetHook[T any](w *Writer[T], hook func(step string) error) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.hook = hook
}
