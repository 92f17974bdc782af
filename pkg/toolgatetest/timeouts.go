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

package toolgatetest

import "time"

// Named timeouts for Eventually and Consistently (kueue's util.Timeout, util.Interval), so
// suites agree on what "soon" means on a shared 2-core machine.
const (
	// Timeout bounds an Eventually on something the apiserver or a controller does promptly.
	Timeout = 10 * time.Second
	// LongTimeout bounds an Eventually that waits on a Job or a Pod.
	LongTimeout = 45 * time.Second
	// Interval is the polling interval of Eventually and Consistently.
	Interval = 50 * time.Millisecond
	// ConsistentDuration is how long Consistently watches for a change that must not happen.
	ConsistentDuration = time.Second
)
