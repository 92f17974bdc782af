//go:build race

package frame

// allocSlack: the race detector's instrumentation allocates on top of the code under test.
const allocSlack = 2
