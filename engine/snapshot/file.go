package snapshot

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
)

// FileName is the name of the local snapshot in its directory.
const FileName = "switchboard.snapshot"

// WriteFile writes a snapshot to dir/FileName atomically: write fills a temporary file of
// the same directory through the Writer it is given (header h), which is synced and then
// renamed over the previous snapshot, and the directory synced; a crash at any point
// leaves the previous snapshot or the new one whole, never a mix. It returns the values
// written.
func WriteFile(dir string, h Header, write func(w *Writer) error) (Counts, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Counts{}, err
	}
	f, err := os.CreateTemp(dir, FileName+".*.tmp")
	if err != nil {
		return Counts{}, err
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := NewWriter(bw, h)
	if err != nil {
		return Counts{}, err
	}
	if err := write(w); err != nil {
		return w.Counts(), err
	}
	if err := w.Close(); err != nil {
		return w.Counts(), err
	}
	if err := bw.Flush(); err != nil {
		return w.Counts(), err
	}
	if err := f.Sync(); err != nil {
		return w.Counts(), err
	}
	if err := f.Close(); err != nil {
		return w.Counts(), err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FileName)); err != nil {
		return w.Counts(), err
	}
	done = true
	return w.Counts(), syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Open opens dir/FileName for Read; os.ErrNotExist when there is none.
func Open(dir string) (*os.File, error) {
	return os.Open(filepath.Join(dir, FileName))
}
