package manifests_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/selection"
)

// yamlBlock is a fenced YAML block of a Markdown file.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestExamplesAreValid: every example SyncerConfig (manifests/examples/) and every SyncerConfig or
// EdgeSyncConfig the configuration reference (docs/configuration.md) shows — whole objects, and the
// blocks that start at spec or one of its fields — decodes strictly into the API types (no unknown
// or misspelt field) and merges without a problem (no warning either).
func TestExamplesAreValid(t *testing.T) {
	docs := map[string]string{}
	examples, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range examples {
		docs[f] = string(read(t, f))
	}
	reference := string(read(t, filepath.Join("..", "docs", "configuration.md")))
	blocks := yamlBlock.FindAllStringSubmatch(reference, -1)
	for i, m := range blocks {
		block := m[1]
		switch {
		case strings.HasPrefix(block, "apiVersion:"), strings.HasPrefix(block, "#"):
		case strings.HasPrefix(block, "spec:"):
			block = "apiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncerConfig\nmetadata: {name: x}\n" + block
		case strings.HasPrefix(block, "  ") && !strings.HasPrefix(block, "   "): // fields of spec
			block = "apiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncerConfig\nmetadata: {name: x}\nspec:\n" + block
		default:
			continue // a piece of an entry, shown in place
		}
		docs["docs/configuration.md block "+string(rune('0'+i/10))+string(rune('0'+i%10))] = block
	}
	if len(docs) < len(examples)+4 {
		t.Fatalf("found %d examples in all; the reference's blocks were not recognised", len(docs))
	}
	for name, doc := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var configs []*edgev1.SyncerConfig
		var edgeConfigs []*edgev1.EdgeSyncConfig
		switch meta.Kind {
		case "SyncerConfig":
			c := &edgev1.SyncerConfig{}
			err = yaml.UnmarshalStrict([]byte(doc), c)
			configs = append(configs, c)
		case "EdgeSyncConfig":
			c := &edgev1.EdgeSyncConfig{}
			err = yaml.UnmarshalStrict([]byte(doc), c)
			edgeConfigs = append(edgeConfigs, c)
		default:
			t.Errorf("%s: kind %q", name, meta.Kind)
			continue
		}
		if err != nil {
			t.Errorf("%s does not decode strictly: %v\n%s", name, err, doc)
			continue
		}
		if _, problems := selection.Merge(configs, edgeConfigs...); len(problems) > 0 {
			t.Errorf("%s: problems %v\n%s", name, problems, doc)
		}
	}
}
