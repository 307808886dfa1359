package gate

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestChain: gates apply in order; the first that stops the key ends it, is told, and the later ones
// are not asked.
func TestChain(t *testing.T) {
	var asked []string
	g := func(name string, v Verdict) Gate[int] {
		return Gate[int]{Name: name, Admit: func(_ context.Context, in int) Verdict { asked = append(asked, name); return v }}
	}
	var told []string
	tell := func(gate string, v Verdict) { told = append(told, gate+":"+v.Kind()) }
	ch := Chain[int]{g("a", Pass), g("b", Stop(time.Second, nil)), g("c", Hold)}
	if v := ch.Admit(context.Background(), 0, tell); !v.Stop || v.After != time.Second {
		t.Errorf("verdict %+v, want b's wait", v)
	}
	if !reflect.DeepEqual(asked, []string{"a", "b"}) || !reflect.DeepEqual(told, []string{"b:wait"}) {
		t.Errorf("asked %v, told %v; want a and b asked, b told", asked, told)
	}
	asked, told = nil, nil
	if v := (Chain[int]{g("a", Pass)}).Admit(context.Background(), 0, tell); v.Stop || len(told) != 0 {
		t.Errorf("verdict %+v, told %v; want passed, nothing told", v, told)
	}
	for v, want := range map[*Verdict]string{{Stop: true}: "hold", {Stop: true, After: 1}: "wait", {Stop: true, Err: errors.New("x")}: "error"} {
		if v.Kind() != want {
			t.Errorf("%+v: kind %s, want %s", *v, v.Kind(), want)
		}
	}
	if n := ch.Names(); !reflect.DeepEqual(n, []string{"a", "b", "c"}) {
		t.Errorf("names %v", n)
	}
}
