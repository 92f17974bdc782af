package toolgatetest

import (
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet expands $(NAME) references in a container's env values before the container
// starts (k8s.io/kubernetes/third_party/forked/golang/expansion). The simulated kubelet
// applies the same rules, so that a test sees what a real body would receive.

// expandEnv is the environment the kubelet gives a container: its env values in order,
// each expanded against the variables declared before it. (Values from valueFrom are
// resolved by Kubelet.containerEnv; service variables are not modelled, toolgate's Pods
// have none.)
func expandEnv(c *corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		value := e.Value
		if value != "" {
			value = expand(value, func(name string) string {
				if v, ok := env[name]; ok {
					return v
				}
				return "$(" + name + ")"
			})
		}
		env[e.Name] = value
	}
	return env
}

// expand is the kubelet's expansion: $$ is a literal $, $(NAME) is replaced by mapping(NAME)
// (which returns the reference itself for an undefined NAME), an unterminated $( and a $
// before any other character stay as written.
func expand(input string, mapping func(string) string) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readReference(input[cursor+1:])
		if isVar {
			read = mapping(read)
		}
		buf.WriteString(read)
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

// readReference reads what follows a $: the text to write (or the name to map, when isVar)
// and how many bytes it consumed.
func readReference(input string) (read string, isVar bool, advance int) {
	r, size := utf8.DecodeRuneInString(input)
	switch r {
	case '$':
		return input[:size], false, size
	case '(':
		if end := strings.IndexByte(input[1:], ')'); end >= 0 {
			return input[1 : end+1], true, end + 2
		}
		return "$(", false, 1
	}
	return "$" + string(r), false, size
}
