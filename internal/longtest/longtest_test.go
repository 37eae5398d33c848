package longtest

import (
	"slices"
	"testing"
)

func TestPickSpreadsTheShortSetOverTheWhole(t *testing.T) {
	t.Setenv(Env, "")
	all := []int{0, 1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		n    int
		want []int
	}{{1, []int{0}}, {2, []int{0, 6}}, {3, []int{0, 3, 6}}, {7, all}, {9, all}} {
		if got := Pick(all, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Pick(%v, %d) = %v, want %v", all, c.n, got, c.want)
		}
	}
	if Scale(1, 2) != 1 {
		t.Error("Scale is long while the long tests are off")
	}
}

func TestTheLongSetIsWholeWhenTheVariableIsOne(t *testing.T) {
	t.Setenv(Env, "1")
	all := []int{0, 1, 2, 3}
	if got := Pick(all, 2); !slices.Equal(got, all) {
		t.Errorf("Pick with %s=1 = %v, want the whole %v", Env, got, all)
	}
	if Scale(1, 2) != 2 {
		t.Error("Scale is short while the long tests are on")
	}
}
