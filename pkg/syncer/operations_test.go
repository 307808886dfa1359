package syncer

import (
	"fmt"
	"strings"
	"testing"
)

func TestBoundedMessage(t *testing.T) {
	var items []string
	for i := 0; i < 1000; i++ {
		items = append(items, fmt.Sprintf("configmaps ns/o%04d: %s", i, strings.Repeat("refused ", 40)))
	}
	msg := bounded(items, len(items))
	if len(msg) > maxMessageLen {
		t.Errorf("message of %d characters", len(msg))
	}
	if !strings.Contains(msg, "o0000") {
		t.Errorf("first example missing: %q", msg[:80])
	}
	short := bounded(items[:2], 1000)
	if !strings.HasSuffix(short, "and 998 more") {
		t.Errorf("count of the rest missing: %q", short)
	}
}
