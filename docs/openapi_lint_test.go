package docs_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"

	"github.com/hushpush/hush/docs"
)

// TestOpenAPILint lints docs/openapi.yaml: it is a valid OpenAPI 3.1
// document (by the specification's own JSON Schema), every schema and
// response it defines under components is used, and every example of a
// body, a response or a component schema is valid against its schema, so
// the examples a reader copies are ones the server accepts or sends.
func TestOpenAPILint(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("docs/openapi.yaml: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("docs/openapi.yaml is not valid OpenAPI 3.1: %s", e.Error())
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.FieldPath, se.Reason)
			}
		}
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	comps := m.Model.Components

	// Every component schema and response is referenced somewhere: by a
	// $ref, or, for the answers any path may give (404, 405), by name in
	// the description ("response `NotFound`").
	description := strings.Join(strings.Fields(m.Model.Info.Description), " ")
	for kind, names := range map[string][]string{
		"schemas":   keys(comps.Schemas),
		"responses": keys(comps.Responses),
	} {
		for _, name := range names {
			ref := regexp.MustCompile(`\$ref: ["']?#/components/` + kind + `/` + regexp.QuoteMeta(name) + `["']?\s`)
			named := kind == "responses" && strings.Contains(description, "response `"+name+"`")
			if !ref.Match(docs.OpenAPI) && !named {
				t.Errorf("docs/openapi.yaml: components/%s/%s is never used", kind, name)
			}
		}
	}

	// Every example is valid against its schema.
	check := func(where string, schema *base.SchemaProxy, example *yaml.Node) {
		t.Helper()
		if schema == nil || example == nil {
			return
		}
		var value any
		if err := example.Decode(&value); err != nil {
			t.Errorf("%s: example: %v", where, err)
			return
		}
		b, err := json.Marshal(value)
		if err != nil {
			t.Errorf("%s: example: %v", where, err)
			return
		}
		if ok, verrs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema.Schema(), b); !ok {
			for _, e := range verrs {
				for _, se := range e.SchemaValidationErrors {
					t.Errorf("%s: example %s: %s: %s", where, b, se.FieldPath, se.Reason)
				}
				if len(e.SchemaValidationErrors) == 0 {
					t.Errorf("%s: example %s: %s", where, b, e.Error())
				}
			}
		}
	}
	content := func(where string, c *orderedmap.Map[string, *v3.MediaType]) {
		t.Helper()
		if c == nil {
			return
		}
		for mt, media := range c.FromOldest() {
			check(where+" "+mt, media.Schema, media.Example)
			if media.Examples != nil {
				for name, ex := range media.Examples.FromOldest() {
					check(fmt.Sprintf("%s %s examples/%s", where, mt, name), media.Schema, ex.Value)
				}
			}
		}
	}
	for path, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := method + " " + path
			if op.RequestBody != nil {
				content(where+" request", op.RequestBody.Content)
			}
			if op.Responses != nil && op.Responses.Codes != nil {
				for code, r := range op.Responses.Codes.FromOldest() {
					content(where+" "+code, r.Content)
				}
			}
		}
	}
	if comps.Responses != nil {
		for name, r := range comps.Responses.FromOldest() {
			content("components/responses/"+name, r.Content)
		}
	}
	if comps.Schemas != nil {
		for name, s := range comps.Schemas.FromOldest() {
			sch := s.Schema()
			if sch == nil {
				continue
			}
			check("components/schemas/"+name, s, sch.Example)
			for i, ex := range sch.Examples {
				check(fmt.Sprintf("components/schemas/%s examples[%d]", name, i), s, ex)
			}
		}
	}
}

// keys are m's keys in document order.
func keys[V any](m *orderedmap.Map[string, V]) []string {
	if m == nil {
		return nil
	}
	var out []string
	for k := range m.KeysFromOldest() {
		out = append(out, k)
	}
	return out
}
