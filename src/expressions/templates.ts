import type { ExpressionBudget, Json } from '../kernel/index.js'
import { BudgetExceeded, expressionBudget, invalid, jsonSize, TenantLru } from '../kernel/index.js'
import type { Operand, OutputObject, Part } from './ast.js'
import { inputCost, outputCost, TEMPLATE_COST, VALUE_NODE_COST, Work } from './cost.js'
import { ExpressionFailure } from './failure.js'
import { filterNamed } from './filters.js'
import { parse } from './parse.js'
import { isObject, joined, toJson, toText, type Value } from './values.js'

/**
 * Basis Theory's expression language for `mask`, `fingerprint_expression` and `search_indexes`: a
 * subset of Liquid (see parse.ts for its syntax). A template that is exactly one object evaluates
 * to the value itself (an object stays an object, a missing property is `null`); otherwise to
 * text, each object rendered as Liquid renders it (nil as empty, arrays joined, objects as JSON).
 *
 * Every failure — a syntax error, an unknown filter, a filter given a value it can't take — is a
 * `validation_failed` naming the field the template came from. Evaluation is bounded: templates of
 * at most `MAX_TEMPLATE_LENGTH` characters, strings of at most `MAX_STRING_LENGTH`, and all the
 * work of the templates evaluated under one `ExpressionBudget` (one request's, or one token
 * value's: see src/kernel/budget.ts) at most its limit, counted before each step is taken.
 */

/** What a template can see: `data`, and `metadata` for fingerprints. */
export type Variables = Readonly<Record<string, Json | undefined>>

/** A parsed template: `evaluate` binds variables and runs it. */
export interface Template {
  /** The template text as given. */
  readonly source: string
  /**
   * The value of the template for these variables (see the module comment), its work charged to
   * `budget` (default: a fresh `MAX_EXPRESSION_WORK`).
   */
  evaluate(vars: Variables, budget?: ExpressionBudget): Json
  /** The template rendered as text: `null` when it renders to nothing (empty or nil). Charged as `evaluate`. */
  render(vars: Variables, budget?: ExpressionBudget): string | null
}

/** A field's name, or how to make it (a path built only when an error names it). */
export type FieldName = string | (() => string)
const nameOf = (field: FieldName): string => (typeof field === 'string' ? field : field())

/** The value an operand names: a literal, or a variable path (`size`, `first`, `last` of arrays). */
function lookup(vars: Variables, op: Operand): Value {
  if (op.kind === 'literal') return op.value
  let v: Value = Object.hasOwn(vars, op.root) ? vars[op.root] : undefined
  for (const key of op.keys) {
    if (v === undefined || v === null) return undefined
    if (Array.isArray(v)) {
      if (key === 'size') v = v.length
      else if (key === 'first') v = v[0]
      else if (key === 'last') v = v[v.length - 1]
      else v = typeof key === 'number' ? v[key] : undefined
    } else if (isObject(v)) v = Object.hasOwn(v, String(key)) ? v[String(key)] : undefined
    else if (typeof v === 'string' && key === 'size') v = v.length
    else return undefined
  }
  return v
}

/** The value of one object: its operand through each filter, each step charged before and after it runs. */
function run(obj: OutputObject, vars: Variables, work: Work): Value {
  let v = lookup(vars, obj.operand)
  for (const f of obj.filters) {
    const args = f.args.map((a) => lookup(vars, a))
    work.charge(inputCost(f.name, v))
    v = filterNamed(f.name)!(v, args, work, f.args)
    work.charge(outputCost(v))
  }
  return v
}

class Compiled implements Template {
  constructor(
    readonly source: string,
    private readonly parts: Part[],
    private readonly field: FieldName,
  ) {}

  /** Runs `f` with the work of `given` (or a fresh budget), its failures a 400 naming the field. */
  private guard<T>(given: ExpressionBudget | undefined, f: (work: Work) => T): T {
    const work = new Work(given ?? expressionBudget())
    try {
      work.charge(TEMPLATE_COST)
      return f(work)
    } catch (error) {
      if (error instanceof ExpressionFailure || error instanceof BudgetExceeded) {
        throw invalid(nameOf(this.field), error.message)
      }
      if (error instanceof RangeError) throw invalid(nameOf(this.field), 'is too large to evaluate')
      throw error
    }
  }

  /** The template's parts rendered as one text, charged as it is made. */
  private text(vars: Variables, work: Work): string {
    const text = joined(
      this.parts.map((p) => (typeof p === 'string' ? p : toText(run(p, vars, work), work))),
      '',
      work,
    )
    work.charge(text.length)
    return text
  }

  evaluate(vars: Variables, given?: ExpressionBudget): Json {
    return this.guard(given, (work) => {
      const [only] = this.parts
      if (this.parts.length === 1 && typeof only === 'object') {
        const value = toJson(run(only, vars, work))
        // The value goes into an answer as JSON as often as templates name it: each copy is paid for.
        const size = jsonSize(value, work.remaining, VALUE_NODE_COST)
        work.ensure(size)
        work.charge(size)
        return value
      }
      return this.text(vars, work)
    })
  }

  render(vars: Variables, given?: ExpressionBudget): string | null {
    return this.guard(given, (work) => {
      const text = this.text(vars, work)
      return text === '' ? null : text
    })
  }
}

/** How many parsed templates the cache keeps of one tenant. */
export const TEMPLATE_CACHE_PER_TENANT = 500
/** How many parsed templates the cache keeps in all. */
export const TEMPLATE_CACHE_ENTRIES = 4000

/**
 * Parsed templates by tenant and source, so hot paths (masks on every read) parse each template
 * once: per tenant the 500 it used most recently, 4000 in all (see `TenantLru`: a tenant's flood of
 * distinct templates evicts only its own).
 */
const cache = new TenantLru<Part[]>(TEMPLATE_CACHE_PER_TENANT, TEMPLATE_CACHE_ENTRIES)

/** Whether `tenant` (default none) has `source` among its parsed templates kept (for tests of eviction). */
export function isTemplateCached(source: string, tenant = ''): boolean {
  return cache.has(tenant, source)
}

/** How many parsed templates are kept: `tenant`'s, or in all (for tests of the bounds). */
export function templatesCached(tenant?: string): number {
  return cache.size(tenant)
}

/**
 * Parses `source` as a template, kept in `tenant`'s part of the cache (`''`: no tenant's, for
 * callers outside a tenant); a syntax error or an unknown filter is a `validation_failed` naming
 * `field` (`mask`, `fingerprint_expression`, `search_indexes.0`), whose errors at evaluation time
 * name it too.
 */
export function compileTemplate(source: string, field: FieldName, tenant = ''): Template {
  let parts = cache.get(tenant, source)
  if (!parts) {
    try {
      parts = parse(source)
    } catch (error) {
      if (error instanceof ExpressionFailure) throw invalid(nameOf(field), error.message)
      throw error
    }
    cache.set(tenant, source, parts)
  }
  return new Compiled(source, parts, field)
}

/** Evaluates `source` with `vars` (see `Template.evaluate`); errors name `field`. */
export function evaluateTemplate(
  source: string,
  vars: Variables,
  field: string,
  budget?: ExpressionBudget,
  tenant = '',
): Json {
  return compileTemplate(source, field, tenant).evaluate(vars, budget)
}

/** Renders `source` with `vars` as text, `null` when empty (see `Template.render`); errors name `field`. */
export function renderTemplate(
  source: string,
  vars: Variables,
  field: string,
  budget?: ExpressionBudget,
  tenant = '',
): string | null {
  return compileTemplate(source, field, tenant).render(vars, budget)
}
