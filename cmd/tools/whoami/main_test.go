package main

import "testing"

func TestTextSandboxed(t *testing.T) {
	r := report{UID: 65532, GID: 65532, TmpWritable: true, CapEff: "0000000000000000", NoNewPrivs: true, Seccomp: "filter"}
	want := "uid=65532 gid=65532 rootfs=ro tmp=rw token=none caps=none nnp=true seccomp=filter\n"
	if got := r.text(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTextFlagsWhatIsOpen(t *testing.T) {
	r := report{RootFilesystemWritable: true, ServiceAccountTokenMounted: true, CapEff: "00000000a80425fb", Seccomp: "disabled"}
	want := "uid=0 gid=0 rootfs=RW tmp=ro token=MOUNTED caps=00000000a80425fb nnp=false seccomp=disabled\n"
	if got := r.text(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRunRejectsUnknownFormat(t *testing.T) {
	if _, err := run([]byte(`{"format":"yaml"}`)); err == nil {
		t.Fatal("want an error")
	}
}
