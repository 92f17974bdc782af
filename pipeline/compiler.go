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
	"sync"

	"github.com/google/cel-go/cel"
)

// Defaults of a Compiler.
const (
	// DefaultCostLimit is the CEL cost limit of one evaluation of one expression.
	DefaultCostLimit = 100_000
	// DefaultCacheSize bounds each of the Compiler's caches (schemas, programs).
	DefaultCacheSize = 1024
)

// CompilerOptions configures a Compiler. Zero fields take the defaults.
type CompilerOptions struct {
	// CostLimit is the CEL runtime cost limit per evaluation; default DefaultCostLimit.
	CostLimit uint64
	// CacheSize bounds the number of cached schemas and of cached CEL programs.
	CacheSize int
}

// Compiler compiles tool schemas and CEL expressions (policies, presentation) once and
// caches them by content, with a bound. It is safe for concurrent use; create one per
// process and share it.
type Compiler struct {
	costLimit uint64
	admission *cel.Env
	results   *cel.Env
	schemas   *boundedCache[string, schemaEntry]
	programs  *boundedCache[programKey, programEntry]
}

type programKey struct {
	env  envKind
	expr string
}

type programEntry struct {
	prg cel.Program
	err error
}

// envKind selects the CEL environment of an expression.
type envKind uint8

const (
	envAdmission envKind = iota // tool, arguments, call
	envResults                  // tool, arguments, call, result
)

// NewCompiler returns a Compiler. It fails only if the CEL environment cannot be built,
// which is a programming error.
func NewCompiler(opts CompilerOptions) (*Compiler, error) {
	if opts.CostLimit == 0 {
		opts.CostLimit = DefaultCostLimit
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	adm, res, err := newEnvs()
	if err != nil {
		return nil, fmt.Errorf("building CEL environments: %w", err)
	}
	return &Compiler{
		costLimit: opts.CostLimit,
		admission: adm,
		results:   res,
		schemas:   newBoundedCache[string, schemaEntry](opts.CacheSize),
		programs:  newBoundedCache[programKey, programEntry](opts.CacheSize),
	}, nil
}

var defaultCompiler = sync.OnceValues(func() (*Compiler, error) { return NewCompiler(CompilerOptions{}) })

// DefaultCompiler returns a process-wide Compiler with default options.
func DefaultCompiler() *Compiler {
	c, err := defaultCompiler()
	if err != nil {
		panic(err) // the environments are static; failing here is a programming error
	}
	return c
}

// program compiles expr in the given environment, checking that its static type is
// want (or dyn), and caches the outcome (errors included: they are deterministic).
func (c *Compiler) program(env envKind, expr string, want *cel.Type) (cel.Program, error) {
	key := programKey{env: env, expr: expr}
	if e, ok := c.programs.get(key); ok {
		return e.prg, e.err
	}
	prg, err := c.compile(env, expr, want)
	c.programs.put(key, programEntry{prg: prg, err: err})
	return prg, err
}

func (c *Compiler) compile(kind envKind, expr string, want *cel.Type) (cel.Program, error) {
	env := c.admission
	if kind == envResults {
		env = c.results
	}
	if expr == "" {
		return nil, fmt.Errorf("expression is empty")
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if out := ast.OutputType(); !want.IsExactType(cel.DynType) && !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("expression yields %s, want %s", out, want)
	}
	return env.Program(ast, cel.CostLimit(c.costLimit), cel.EvalOptions(cel.OptOptimize))
}
