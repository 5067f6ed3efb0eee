package gather

import (
	"context"
	"testing"
	"time"
)

type key struct{}

func TestContext(t *testing.T) {
	base := time.Now().Add(time.Hour)
	first, cancelFirst := context.WithDeadline(context.WithValue(context.Background(), key{}, "first"), base)
	defer cancelFirst()
	later, cancelLater := context.WithDeadline(context.Background(), base.Add(time.Minute))
	defer cancelLater()
	id := func(c context.Context) context.Context { return c }

	ctx, cancel := Context([]context.Context{first, later}, id)
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(base.Add(time.Minute)) {
		t.Errorf("deadline %v %v, want the latest, %v", d, ok, base.Add(time.Minute))
	}
	if ctx.Value(key{}) != "first" {
		t.Errorf("value %v, want the first call's", ctx.Value(key{}))
	}
	cancelFirst()
	if ctx.Err() != nil {
		t.Errorf("a caller leaving cancelled the send: %v", ctx.Err())
	}

	ctx, cancel = Context([]context.Context{later, context.Background()}, id)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a call without a deadline: the send must have none")
	}
}
