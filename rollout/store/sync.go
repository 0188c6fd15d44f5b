package store

// Sync writes and syncs every record appended so far. A caller that must
// know its records are on disk before acknowledging them elsewhere (the
// work-queue coordinator acks a result only once it is synced) calls it
// after a batch of Appends.
func (w *Writer) Sync() error {
	w.syncMu.Lock() // an Append's own sync in flight finishes first
	defer w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.pending == 0 {
		return nil
	}
	w.err = w.syncLocked()
	return w.err
}
