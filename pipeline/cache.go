/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package pipeline

import "sync"

// boundedCache is a concurrency-safe map with a maximum size; when full, the oldest
// entry is evicted (FIFO). Compiled schemas and programs are cheap to rebuild, so FIFO
// is enough to bound memory without LRU bookkeeping on the hot read path.
type boundedCache[K comparable, V any] struct {
	mu    sync.RWMutex
	limit int
	items map[K]V
	order []K
}

func newBoundedCache[K comparable, V any](limit int) *boundedCache[K, V] {
	return &boundedCache[K, V]{limit: limit, items: make(map[K]V)}
}

func (c *boundedCache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.items[k]
	c.mu.RUnlock()
	return v, ok
}

// getBytes looks up a string key given as bytes. The conversion inside the index
// expression is one the compiler performs without allocating, which matters for the
// schema cache: it is keyed by whole documents and consulted on every call.
func getBytes[V any](c *boundedCache[string, V], k []byte) (V, bool) {
	c.mu.RLock()
	v, ok := c.items[string(k)]
	c.mu.RUnlock()
	return v, ok
}

func (c *boundedCache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		c.items[k] = v
		return
	}
	for len(c.order) >= c.limit && len(c.order) > 0 {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	c.items[k] = v
	c.order = append(c.order, k)
}

func (c *boundedCache[K, V]) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.items)
}
