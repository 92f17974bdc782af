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
	"hash/maphash"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types/ref"
)

// Defaults of a Compiler.
const (
	// DefaultCostLimit is the CEL cost limit of one evaluation of one expression.
	DefaultCostLimit = 100_000
	// DefaultCacheSize bounds each of the Compiler's caches (schemas, programs, policy sets).
	DefaultCacheSize = 1024
)

// CompilerOptions configures a Compiler. Zero fields take the defaults.
type CompilerOptions struct {
	// CostLimit is the CEL runtime cost limit per evaluation; default DefaultCostLimit.
	// An evaluation over inputs small enough that CEL's static estimate keeps the
	// expression within a sixteenth of the limit runs without tracking (see program).
	CostLimit uint64
	// CacheSize bounds the number of cached schemas, of cached CEL programs and of
	// cached policy sets.
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
	// policySets caches CompilePolicies by a hash of its input (verified on a hit).
	policySets *boundedCache[uint64, policySet]
	seed       maphash.Seed
}

type programKey struct {
	env  envKind
	expr string
}

type programEntry struct {
	prg *program
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
		costLimit:  opts.CostLimit,
		admission:  adm,
		results:    res,
		schemas:    newBoundedCache[string, schemaEntry](opts.CacheSize),
		programs:   newBoundedCache[programKey, programEntry](opts.CacheSize),
		policySets: newBoundedCache[uint64, policySet](opts.CacheSize),
		seed:       maphash.MakeSeed(),
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
func (c *Compiler) program(env envKind, expr string, want *cel.Type) (*program, error) {
	key := programKey{env: env, expr: expr}
	if e, ok := c.programs.get(key); ok {
		return e.prg, e.err
	}
	prg, err := c.compile(env, expr, want)
	c.programs.put(key, programEntry{prg: prg, err: err})
	return prg, err
}

func (c *Compiler) compile(kind envKind, expr string, want *cel.Type) (*program, error) {
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
	tracked, err := env.Program(ast, cel.CostLimit(c.costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	p := &program{tracked: tracked}
	if maxSize, ok := c.safeSize(env, ast); ok {
		if plain, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err == nil {
			p.plain, p.maxSize = plain, maxSize
		}
	}
	return p, nil
}

// program is a compiled expression. Runtime cost tracking (the per-evaluation cost
// limit) observes every step of an evaluation and was most of a policy's cost, although
// a typical rule costs a few units against a limit of 100,000. So an expression whose
// worst-case cost, as CEL's static estimator bounds it (checker.Cost, the estimate the
// runtime tracker is kept consistent with), stays within a sixteenth of the limit
// whenever no input value is larger than maxSize, also gets a program without tracking,
// used for inputs that small: for them the limit cannot be reached, so evaluation
// without it gives the same result. Every other evaluation is tracked, as before.
type program struct {
	tracked cel.Program
	plain   cel.Program // nil: always tracked
	maxSize uint64
}

// eval evaluates p over act, without tracking when act's inputs are small enough.
func (p *program) eval(act *activation) (ref.Val, error) {
	prg := p.tracked
	if p.plain != nil && act.sizeBound() <= p.maxSize {
		prg = p.plain
	}
	out, _, err := prg.Eval(act)
	return out, err
}

// costMargin is how far under the cost limit an estimate must stay for the untracked
// program to be used: room for rounding differences between estimator and tracker.
const costMargin = 16

// maxSizeExp bounds the input sizes considered (2^40: far beyond any input's size).
const maxSizeExp = 40

// safeSize returns the largest power of two n such that the estimated worst-case cost
// of ast is at most costLimit/costMargin when every input value (string, list, map) has
// a size of at most n; ok is false when even inputs of size 1 could exceed it. The
// estimate grows with n, so a binary search over the exponent finds it.
func (c *Compiler) safeSize(env *cel.Env, ast *cel.Ast) (n uint64, ok bool) {
	budget := c.costLimit / costMargin
	fits := func(exp int) (fit bool) {
		defer func() {
			if recover() != nil {
				fit = false
			}
		}()
		est, err := env.EstimateCost(ast, inputSizes{max: 1 << exp})
		return err == nil && est.Max <= budget
	}
	if !fits(0) {
		return 0, false
	}
	lo, hi := 0, maxSizeExp // fits(lo); fits(hi) unknown
	if fits(hi) {
		return 1 << hi, true
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 1 << lo, true
}

// inputSizes is a checker.CostEstimator bounding the size of every value reachable from
// the variables (tool, arguments, call, result: every node with a field path) by max;
// everything else is left to CEL, which takes unknown sizes as unbounded.
type inputSizes struct{ max uint64 }

func (e inputSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if len(n.Path()) == 0 {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: e.max}
}

func (inputSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
