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

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/toolgate/toolgate/pkg/agentclient"
)

// NewScheme returns a fresh scheme with client-go's built-in kinds, apiextensions/v1
// (to read CRDs) and toolgate.dev/v1alpha1.
func NewScheme() *runtime.Scheme {
	s := agentclient.Scheme() // client-go's kinds and toolgate.dev/v1alpha1
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(admissionregistrationv1.AddToScheme(s))
	return s
}
