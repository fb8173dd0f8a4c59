package docs_test

import (
	"slices"
	"testing"

	"github.com/pb33f/libopenapi"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/hushpush/hush/docs"
)

// TestOpenAPIWebhook: docs/openapi.yaml describes the webhook's POST
// (docs/events.md, "The webhook") as an OpenAPI 3.1 webhook: its three
// Standard Webhooks headers, and a body that is the very component GET
// /v1/events returns in each entry's `event`, not a second copy of it.
func TestOpenAPIWebhook(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if m.Model.Webhooks == nil || m.Model.Webhooks.Len() == 0 {
		t.Fatal("docs/openapi.yaml has no webhooks section")
	}
	var posts int
	for name, item := range m.Model.Webhooks.FromOldest() {
		op := item.Post
		if op == nil {
			t.Errorf("webhook %s: no POST", name)
			continue
		}
		posts++
		var headers []string
		for _, p := range op.Parameters {
			if p.In == "header" {
				headers = append(headers, p.Name)
			}
		}
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			if !slices.Contains(headers, h) {
				t.Errorf("webhook %s: header %s is not named (headers: %v)", name, h, headers)
			}
		}
		if op.RequestBody == nil {
			t.Errorf("webhook %s: no request body", name)
			continue
		}
		mt := op.RequestBody.Content.GetOrZero("application/json")
		if mt == nil || mt.Schema == nil {
			t.Errorf("webhook %s: no application/json body schema", name)
			continue
		}
		if want, got := eventsRouteEventRef(t, m.Model.Paths.PathItems.GetOrZero("/v1/events").Get), mt.Schema.GetReference(); want != got {
			t.Errorf("webhook %s: body schema is %q, want %q, the component GET /v1/events returns", name, got, want)
		}
	}
	if posts == 0 {
		t.Error("docs/openapi.yaml's webhooks have no POST")
	}
}

// eventsRouteEventRef is the reference of the schema of `event` in each
// entry of GET /v1/events's 200 answer.
func eventsRouteEventRef(t *testing.T, get *v3.Operation) string {
	t.Helper()
	if get == nil {
		t.Fatal("docs/openapi.yaml has no GET /v1/events")
	}
	page := get.Responses.Codes.GetOrZero("200").Content.GetOrZero("application/json").Schema.Schema()
	entry := page.Properties.GetOrZero("events").Schema().Items.A.Schema()
	ref := entry.Properties.GetOrZero("event").GetReference()
	if ref == "" {
		t.Fatal("GET /v1/events: an entry's event is not a component")
	}
	return ref
}
