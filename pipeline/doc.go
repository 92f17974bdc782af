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

// Package pipeline is toolgate's pure core: each ToolCall stage is a function from
// immutable input to a verdict on the lattice Allow > Ask > Deny; no client, no cluster.
//
//  1. Freeze: canonical JSON of the arguments and its sha256 digest (Freeze).
//  2. Validate: JSON Schema 2020-12 against the tool's parameters, every violation listed.
//  3. PreExecute: ordered CEL policies; the first Deny stops, Ask parks for approval.
//  4. Guard: guard policies and checks may only lower the verdict. Admit runs 1–4 at once.
//  5. Execute: the controllers' Job; DecideApproval and DecideRetry decide around it.
//  6. PostExecute: Accept, Block or Redact the result, then check the output schema.
//  7. Normalize: every outcome, failures included, becomes one structured Result.
//  8. StoreResult: the final Result fitted to its stored fields, in the form the API
//     server stores, with its canonical bytes and digest (FreezeResult), in one encoding.
//
// Index resolves tools through scopes, Runnable schedules a session, and
// Compiler.PresentCall/PresentResult render calls for UIs. Every stage fails closed.
// The strict JSON parser and canonical encoder behind Freeze, FreezeResult and Normalize
// are package pipeline/internal/canonjson; its refusals reach callers as *FreezeError.
package pipeline
