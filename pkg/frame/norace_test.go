//go:build !race

package frame

// allocSlack: without the race detector, allocations are the code's own.
const allocSlack = 1
