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
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

var printer = message.NewPrinter(language.English)

// Bounds of violation messages: a message quotes the caller's values (a string that fails
// a pattern, a property name), and a caller controls their size.
const (
	// maxQuotedValue is how much of a value a message quotes (bytes); longer values are
	// cut with their full size given.
	maxQuotedValue = 64
	// maxViolationMessage bounds one violation's sentence (bytes).
	maxViolationMessage = 512
	// maxQuotedNames is how many property names a message lists.
	maxQuotedNames = 5
)

// violationMessage renders an error kind as a sentence, at most maxViolationMessage bytes.
func violationMessage(k jsonschema.ErrorKind) string {
	return boundText(kindMessage(k), maxViolationMessage)
}

// kindMessage renders an error kind. The library's own texts print numbers through
// float64 and with digit grouping ("got ∞", "5,000"); for the numeric keywords we print
// exact, JSON-looking numbers instead. Those that quote the caller's values quote a bounded
// prefix.
func kindMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match pattern %s", quoteValue(k.Got), quoteValue(k.Want))
	case *kind.Format:
		if got, ok := k.Got.(string); ok {
			msg := fmt.Sprintf("%s is not valid %s", quoteValue(got), k.Want)
			if k.Err != nil {
				// The error may quote the value again: bound it too.
				msg += ": " + boundText(k.Err.Error(), maxQuotedValue*2)
			}
			return msg
		}
	case *kind.PropertyNames:
		return "invalid propertyName " + quoteValue(k.Property)
	case *kind.AdditionalProperties:
		return fmt.Sprintf("additional properties %s not allowed", quoteNames(k.Properties))
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
	return canonjson.NormalizeNumber(new(big.Float).SetPrec(128).SetRat(r).Text('g', 20))
}

// quoteValue quotes s as the validator does ('…'), cutting it to maxQuotedValue bytes and
// then giving its full size.
func quoteValue(s string) string {
	if len(s) <= maxQuotedValue {
		return quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", quote(UTF8Prefix(s, maxQuotedValue)), len(s))
}

func quote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, "'", `\'`) + "'"
}

// quoteNames lists the first maxQuotedNames names, each bounded, and counts the rest.
func quoteNames(names []string) string {
	parts := make([]string, 0, min(len(names), maxQuotedNames))
	for i, n := range names {
		if i == maxQuotedNames {
			break
		}
		parts = append(parts, quoteValue(n))
	}
	s := strings.Join(parts, ", ")
	if more := len(names) - len(parts); more > 0 {
		s += fmt.Sprintf(" (and %d more)", more)
	}
	return s
}

// boundText cuts s to at most n bytes at a rune boundary, saying that it did.
func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "… (truncated)"
	return UTF8Prefix(s, n-len(mark)) + mark
}

// UTF8Prefix is the longest prefix of s of at most n bytes that does not end inside a
// multi-byte character ("" when n <= 0).
func UTF8Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
