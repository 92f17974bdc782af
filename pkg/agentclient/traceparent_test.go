package agentclient

import "testing"

func TestValidTraceparent(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for in, want := range map[string]string{
		ok:              ok,
		" " + ok + "\t": ok,
		"":              "",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "",
		ok + "-extra": "",
		"garbage":     "",
	} {
		if got := ValidTraceparent(in); got != want {
			t.Errorf("ValidTraceparent(%q) = %q, want %q", in, got, want)
		}
	}
}
