package svgchart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// Check reports whether doc is a well-formed SVG document: XML that parses to its end with
// one root, an svg element in the SVG namespace. Tests of every chart's producer (the
// bench report, the console) use it, so a chart that a browser would refuse fails there.
func Check(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	root, depth := "", 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = e.Name.Local
				if e.Name.Space != "http://www.w3.org/2000/svg" {
					return fmt.Errorf("root namespace %q", e.Name.Space)
				}
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if root != "svg" || depth != 0 {
		return fmt.Errorf("root %q, depth at end %d", root, depth)
	}
	return nil
}
