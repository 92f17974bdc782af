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

import (
	"fmt"
	"math/big"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// violationMessage renders an error kind as a sentence. The library's own texts print
// numbers through float64 and with digit grouping ("got ∞", "5,000"); for the numeric
// keywords we print exact, JSON-looking numbers instead.
func violationMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return ratMessage("minimum", k.Got, k.Want)
	case *kind.Maximum:
		return ratMessage("maximum", k.Got, k.Want)
	case *kind.ExclusiveMinimum:
		return ratMessage("exclusiveMinimum", k.Got, k.Want)
	case *kind.ExclusiveMaximum:
		return ratMessage("exclusiveMaximum", k.Got, k.Want)
	case *kind.MultipleOf:
		return ratMessage("multipleOf", k.Got, k.Want)
	case *kind.MinLength:
		return intMessage("minLength", k.Got, k.Want)
	case *kind.MaxLength:
		return intMessage("maxLength", k.Got, k.Want)
	case *kind.MinItems:
		return intMessage("minItems", k.Got, k.Want)
	case *kind.MaxItems:
		return intMessage("maxItems", k.Got, k.Want)
	case *kind.MinProperties:
		return intMessage("minProperties", k.Got, k.Want)
	case *kind.MaxProperties:
		return intMessage("maxProperties", k.Got, k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("items at %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	}
	return k.LocalizedString(printer)
}

func intMessage(keyword string, got, want int) string {
	return fmt.Sprintf("%s: got %d, want %d", keyword, got, want)
}

func ratMessage(keyword string, got, want *big.Rat) string {
	return fmt.Sprintf("%s: got %s, want %s", keyword, ratText(got), ratText(want))
}

// ratText prints a number exactly when it is a reasonably short integer, otherwise with
// 20 significant digits, in JSON number syntax (1e400, not +Inf).
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() && r.Num().BitLen() <= 100 {
		return r.Num().String()
	}
	return normNumber(new(big.Float).SetPrec(128).SetRat(r).Text('g', 20))
}
