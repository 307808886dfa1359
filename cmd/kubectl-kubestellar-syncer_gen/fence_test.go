package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFenceFlags: the fence is on by default with no namespace protected beyond those always are; its flags parse; widening a
// fence that is off is refused, naming the flag.
func TestFenceFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(o *options) bool
	}{
		{nil, "", func(o *options) bool {
			return o.Fence && len(o.ProtectedNamespaces) == 0 && !o.AllowWebhooks && !o.AllowEscalation
		}},
		{[]string{"--fence-protected-namespaces=kube-system,payments", "--fence-allow-webhooks", "--fence-allow-escalation"}, "", func(o *options) bool {
			return o.Fence && slices.Equal(o.ProtectedNamespaces, []string{"kube-system", "payments"}) && o.AllowWebhooks && o.AllowEscalation
		}},
		{[]string{"--fence=false"}, "", func(o *options) bool { return !o.Fence }},
		{[]string{"--fence=false", "--fence-allow-webhooks"}, "--fence-allow-webhooks needs --fence", nil},
		{[]string{"--fence=false", "--fence-protected-namespaces="}, "--fence-protected-namespaces needs --fence", nil},
	} {
		o := newOptions()
		fs := pflag.NewFlagSet("syncer-gen", pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := o.complete(fs)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: %v, want %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.check != nil && !tc.check(o):
			t.Errorf("%v: options %+v", tc.args, o.Options)
		}
	}
}
