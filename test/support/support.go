package support

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseMetrics reads Prometheus text exposition into "name{l1="v1",...}" -> value, for counters,
// gauges and untyped samples.
func ParseMetrics(r io.Reader) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Untyped != nil:
				out[key] = m.Untyped.GetValue()
			}
		}
	}
	return out, nil
}

// NSScope is a SyncerConfig spec selecting the given resources in the given namespaces.
func NSScope(namespaces []string, resources ...map[string]interface{}) map[string]interface{} {
	ns := make([]interface{}, len(namespaces))
	for i, n := range namespaces {
		ns[i] = n
	}
	res := make([]interface{}, len(resources))
	for i, r := range resources {
		res[i] = r
	}
	return map[string]interface{}{"namespaceScope": map[string]interface{}{"namespaces": ns, "resources": res}}
}

// Resource is one entry of a SyncerConfig's resource lists.
func Resource(group, version, res string) map[string]interface{} {
	return map[string]interface{}{"group": group, "apiVersion": version, "resource": res}
}

// FreeAddr returns a 127.0.0.1 address with a port nobody listens on right now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
