package toolgatetest

import (
	"crypto/sha256"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// SimulatedPodIP is the address the simulated kubelet gives the running Pod with uid
// (status.podIP): 10.244.x.y, x and y from the uid's hash.
func SimulatedPodIP(uid types.UID) string {
	h := sha256.Sum256([]byte(uid))
	return fmt.Sprintf("10.244.%d.%d", h[0], max(h[1], 1))
}
