package bootstrap

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestMemoryFor: the request is the measured base plus the measured cost per object, the limit
// that of twice the objects (at least 256Mi), both rounded up to 16Mi.
func TestMemoryFor(t *testing.T) {
	for _, tc := range []struct {
		objects        int
		request, limit string
	}{
		{0, "64Mi", "256Mi"},
		{1000, "80Mi", "256Mi"},        // 64Mi + 7.8Mi
		{10000, "144Mi", "256Mi"},      // 64Mi + 78.1Mi; the limit's 220.25Mi is below the floor
		{30000, "304Mi", "544Mi"},      // 64Mi + 234.4Mi; 64Mi + 468.75Mi
		{100000, "848Mi", "1632Mi"},    // 64Mi + 781.25Mi; 64Mi + 1,562.5Mi
		{1000000, "7888Mi", "15696Mi"}, // 64Mi + 7,812.5Mi; 64Mi + 15,625Mi
	} {
		request, limit := MemoryFor(tc.objects)
		if request.String() != tc.request || limit.String() != tc.limit {
			t.Errorf("MemoryFor(%d) = %s, %s; want %s, %s", tc.objects, request.String(), limit.String(), tc.request, tc.limit)
		}
	}
	if got, want := ResourcesFor(DefaultExpectedObjects), DefaultResources(); got != want {
		t.Errorf("ResourcesFor(DefaultExpectedObjects) = %+v, DefaultResources() = %+v", got, want)
	}
}

// TestMemoryForCoversMeasured: the request covers the highest RSS docs/performance.md reports at
// each size (ConfigMaps of about 1.2 KiB, default flags), and the limit twice the part above the
// base. A change of the constants that no longer covers the measurements fails here.
func TestMemoryForCoversMeasured(t *testing.T) {
	const mib = 1 << 20
	for objects, rssMiB := range map[int]float64{0: 53.2, 1000: 66.7, 10000: 133, 100000: 772} {
		request, limit := MemoryFor(objects)
		if float64(request.Value()) < rssMiB*mib {
			t.Errorf("%d objects: request %s below the measured RSS %.1f MiB", objects, request.String(), rssMiB)
		}
		if float64(limit.Value()) < 2*rssMiB*mib-float64(MemoryBase) {
			t.Errorf("%d objects: limit %s has no room for twice the measured objects (RSS %.1f MiB)", objects, limit.String(), rssMiB)
		}
		if request.Cmp(limit) > 0 {
			t.Errorf("%d objects: request %s above limit %s", objects, request.String(), limit.String())
		}
	}
}

func TestResourcesRequirements(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name    string
		in      Resources
		want    corev1.ResourceRequirements
		wantErr []string // each must be in the error
	}{
		{name: "defaults", in: DefaultResources(), want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("144Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("256Mi")}}},
		{name: "all set", in: Resources{RequestsCPU: "0.25", RequestsMemory: "256Mi", LimitsCPU: "2", LimitsMemory: "2G"}, want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("2G")}}},
		{name: "empty entries are left out", in: Resources{RequestsMemory: "64Mi"}, want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}}},
		{name: "none", in: Resources{}, want: corev1.ResourceRequirements{}},
		{name: "request equal to limit", in: Resources{RequestsCPU: "1", LimitsCPU: "1000m"}, want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}, Limits: corev1.ResourceList{corev1.ResourceCPU: q("1000m")}}},
		{name: "not a quantity", in: Resources{RequestsCPU: "lots", LimitsMemory: "1 Gi"},
			wantErr: []string{`--requests-cpu "lots" is not a quantity`, `--limits-memory "1 Gi" is not a quantity`}},
		{name: "negative", in: Resources{RequestsMemory: "-1Mi"}, wantErr: []string{`--requests-memory "-1Mi" must not be negative`}},
		{name: "request above limit", in: Resources{RequestsMemory: "2Gi", LimitsMemory: "1Gi", RequestsCPU: "2", LimitsCPU: "500m"},
			wantErr: []string{"--requests-memory 2Gi exceeds --limits-memory 1Gi", "--requests-cpu 2 exceeds --limits-cpu 500m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.Requirements()
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; got %v", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateResources: Options.Validate reports bad resources with the other problems.
func TestValidateResources(t *testing.T) {
	o := testOptions()
	o.Replicas = -1
	o.Resources = &Resources{RequestsCPU: "x"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), `--requests-cpu "x" is not a quantity`) || !strings.Contains(err.Error(), "--replicas must not be negative") {
		t.Errorf("error %v", err)
	}
	o = testOptions()
	o.Resources = nil // the defaults
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}

// TestDeploymentResources: the Deployment carries the requirements given, the defaults when none
// are, and no resources at all when every entry is left out.
func TestDeploymentResources(t *testing.T) {
	container := func(e Edge) corev1.Container {
		t.Helper()
		objs, err := e.Objects()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				return d.Spec.Template.Spec.Containers[0]
			}
		}
		t.Fatal("no Deployment")
		return corev1.Container{}
	}
	e := edge()
	e.Resources = nil
	if diff := cmp.Diff(defaultRequirements(), container(e).Resources); diff != "" {
		t.Errorf("nil Resources are not the defaults (-want +got):\n%s", diff)
	}
	custom, err := Resources{RequestsCPU: "250m", LimitsCPU: "1", LimitsMemory: "512Mi"}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	e.Resources = &custom
	if diff := cmp.Diff(custom, container(e).Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	e.Resources = &corev1.ResourceRequirements{}
	manifest, err := e.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), "\n        resources: {}\n") || strings.Contains(string(manifest), "requests:") {
		t.Errorf("with every entry left out the container still has resources:\n%s", manifest)
	}
}
