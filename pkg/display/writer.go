package display

import (
	"bytes"
	"io"
)

// Writer shows what is written to it on an underlying writer, as Options.String would
// show all of it at once: a character split across two writes is shown once complete,
// and a line cut stays cut until its newline. Close ends the last line (its cut marker)
// and shows an incomplete character left at the end as invalid bytes.
type Writer struct {
	w       io.Writer
	st      state
	pending []byte
	out     bytes.Buffer
	err     error
}

// NewWriter returns a Writer showing text on w as o says.
func (o Options) NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, st: state{o: o}}
}

// Write shows p. It reports all of p written unless the underlying writer failed.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	data := p
	if len(w.pending) > 0 {
		data = append(append(make([]byte, 0, len(w.pending)+len(p)), w.pending...), p...)
	}
	n, _ := w.st.process(string(data), false, w.collect)
	w.pending = append(w.pending[:0], data[n:]...)
	if err := w.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close shows what is left and ends the last line; it does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	w.st.process(string(w.pending), true, w.collect)
	w.pending = nil
	w.st.endLine(w.collect)
	return w.flush()
}

func (w *Writer) collect(text string, _ bool) bool {
	w.out.WriteString(text)
	return true
}

func (w *Writer) flush() error {
	if w.out.Len() == 0 {
		return nil
	}
	_, err := w.w.Write(w.out.Bytes())
	w.out.Reset()
	if err != nil {
		w.err = err
	}
	return err
}
