package gateway

// metaString is the string value of key in a request's _meta (MCP's extension point; a
// client's trace context travels as _meta.traceparent), "" when absent or not a string.
func metaString(meta map[string]any, key string) string {
	s, _ := meta[key].(string)
	return s
}
