package app

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// loadOpenAPI loads and validates docs/openapi.yaml with kin-openapi.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatalf("docs/openapi.yaml does not load as OpenAPI 3: %v (quote descriptions that contain \": \" or start with a backtick)", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml is not valid OpenAPI 3 (kin-openapi): %v", err)
	}
	return doc
}

// TestOpenAPIIsValid: docs/openapi.yaml is valid OpenAPI 3 under
// kin-openapi (issue 15 item 9).
func TestOpenAPIIsValid(t *testing.T) {
	t.Parallel()
	loadOpenAPI(t)
}
