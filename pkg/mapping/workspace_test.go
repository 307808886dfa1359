package mapping

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestWorkspaceNamespace(t *testing.T) {
	long := strings.Repeat("a", 51) + "-" + strings.Repeat("b", 11) // 63 characters, the cut falls after the dash
	cases := []struct{ cluster, ns string }{
		{"2x8bn1kd1e0xmd1c", "shop"}, {"2x8bn1kd1e0xmd1c", "default"}, {"3abcd", "shop"}, {"3abcd", long}, {"c", "a"},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := WorkspaceNamespace(c.cluster, c.ns)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("WorkspaceNamespace(%q, %q) = %q, not a namespace name: %v", c.cluster, c.ns, got, errs)
		}
		if got != WorkspaceNamespace(c.cluster, c.ns) {
			t.Errorf("WorkspaceNamespace(%q, %q) is not deterministic", c.cluster, c.ns)
		}
		if len(c.ns) <= 52 && !strings.HasPrefix(got, c.ns+"-") {
			t.Errorf("WorkspaceNamespace(%q, %q) = %q, want the upstream name first", c.cluster, c.ns, got)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("WorkspaceNamespace(%q, %q) = %q, the same as for %s", c.cluster, c.ns, got, prev)
		}
		seen[got] = c.cluster + "/" + c.ns
	}
	if got := WorkspaceNamespace("3abcd", long); strings.Contains(got, "--") {
		t.Errorf("cut name keeps a trailing dash: %q", got)
	}
}
