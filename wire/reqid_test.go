package wire

import (
	"reflect"
	"testing"
)

// TestReqIDEveryNumberedType checks that every frame type whose struct has
// a ReqID field is known to ReqIDOf and SetReqID: a type added later without
// its reqID method would leave a shared connection unable to route its
// answers.
func TestReqIDEveryNumberedType(t *testing.T) {
	for ty := Type(0); ty < 255; ty++ {
		m := newMessage(ty)
		if m == nil {
			continue
		}
		_, has := reflectReqID(m)
		if got := SetReqID(m, 7); got != has {
			t.Errorf("type %d (%T): SetReqID reports %v, struct has a ReqID field: %v", ty, m, got, has)
			continue
		}
		if !has {
			continue
		}
		if id, ok := ReqIDOf(m); !ok || id != 7 {
			t.Errorf("type %d (%T): ReqIDOf after SetReqID(7) = %d, %v", ty, m, id, ok)
		}
		if f, _ := reflectReqID(m); f != 7 {
			t.Errorf("type %d (%T): SetReqID(7) left the ReqID field at %d", ty, m, f)
		}
	}
}

// reflectReqID reads m's ReqID field by reflection (tests only).
func reflectReqID(m Message) (uint64, bool) {
	v := reflect.ValueOf(m).Elem()
	f := v.FieldByName("ReqID")
	if !f.IsValid() || f.Kind() != reflect.Uint64 {
		return 0, false
	}
	return f.Uint(), true
}
