package openapi_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard/switchboard/internal/openapi"
)

var update = flag.Bool("update", false, "rewrite docs/openapi/*.json from the embedded documents")

// docsDir holds the committed copies of the documents, for readers of the repository.
const docsDir = "../../docs/openapi"

// TestDocsCopies keeps docs/openapi/buyer.json and supply.json equal to the embedded
// documents (-update rewrites them).
func TestDocsCopies(t *testing.T) {
	for name, doc := range map[string][]byte{"buyer.json": openapi.Buyer(), "supply.json": openapi.Supply()} {
		file := filepath.Join(docsDir, name)
		if *update {
			if err := os.MkdirAll(docsDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/openapi -run TestDocsCopies -update)", err)
		}
		if !bytes.Equal(got, doc) {
			t.Errorf("%s differs from internal/openapi/%s (run go test ./internal/openapi -run TestDocsCopies -update)", file, name)
		}
	}
}
