package conversation

import "testing"

// TestSetFormatsWaitsForTheConnectionToEnd: new audio formats (a reload)
// apply at once with no connection up; with one up, which speaks the old
// ones to its end, they apply when it goes down, before the next comes up.
func TestSetFormatsWaitsForTheConnectionToEnd(t *testing.T) {
	c, err := New(Options{}, &sent{})
	if err != nil {
		t.Fatal(err)
	}
	formats := func() (in, out bool) { cd := c.codec.Load(); return cd.enc != nil, cd.dec != nil }
	if err := c.SetFormats(true, false); err != nil {
		t.Fatal(err)
	}
	if in, out := formats(); !in || out {
		t.Fatalf("no connection up: input opus %v, output opus %v after SetFormats(true, false)", in, out)
	}
	c.LinkUp()
	if err := c.SetFormats(false, true); err != nil {
		t.Fatal(err)
	}
	if in, out := formats(); !in || out {
		t.Fatalf("the connection up: input opus %v, output opus %v, want its own (true, false)", in, out)
	}
	c.LinkDown(nil)
	if in, out := formats(); in || !out {
		t.Fatalf("after the connection: input opus %v, output opus %v, want the new (false, true)", in, out)
	}
}
