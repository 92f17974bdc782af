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

// Package rbac embeds the ClusterRoles toolgate ships for its users, so that tests and
// tools apply them by importing this package, without file paths.
package rbac

import _ "embed"

// AgentRole is agent_role.yaml: the toolgate-agent ClusterRole (make, read and cancel
// calls; read tools).
//
//go:embed agent_role.yaml
var AgentRole []byte

// ApproverRole is approver_role.yaml: the toolgate-approver ClusterRole (read calls and
// tools; answer calls with ToolCallApprovals).
//
//go:embed approver_role.yaml
var ApproverRole []byte

// MetricsAuthRole is metrics_auth_role.yaml: the toolgate-metrics-auth ClusterRole the
// operator needs to authenticate and authorise scrapes of its metrics endpoint.
//
//go:embed metrics_auth_role.yaml
var MetricsAuthRole []byte

// MetricsReaderRole is metrics_reader_role.yaml: the toolgate-metrics-reader ClusterRole a
// scraper needs (get on /metrics).
//
//go:embed metrics_reader_role.yaml
var MetricsReaderRole []byte
