import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
// @ts-expect-error: a plain JavaScript script, checked by running it
import { splitMemoryState } from '../../scripts/split-memory-state.mjs'

const WHOLE = `import type { Check, Op } from '../kernel/index.js'
import { copy } from './json.js'

/** A sort key. */
const k = (tenantId: string, id: string) => \`\${tenantId}:\${id}\`

/** The records. */
export interface StateRecords {
  tenants: readonly string[]
}

/** The whole store. */
export class MemoryState {
  private tenants = new Map<string, string>()
  private counts = new Map<
    string,
    number
  >()

  /** The first check that fails. */
  failedCheck(checks: readonly Check[]): Check | null {
    for (const c of checks) if (!this.holds(c)) return c
    return null
  }

  private holds(c: Check): boolean {
    return c.check !== 'token.absent'
  }

  /** Applies one op. */
  apply(op: Op): void {
    if (op.op === 'tenant.put') this.remember(op.tenant.id)
  }

  private remember(id: string) {
    this.tenants.set(k(id, id), id)
  }

  /** A read. */
  getTenant(
    id: string,
  ): string | null {
    return copy(this.tenants.get(k(id, id)) ?? null)
  }

  records(): StateRecords {
    return { tenants: [...this.tenants.values()] }
  }
}
`

let root: string | undefined
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true })
})

it('splits a whole MemoryState by member: maps, checks, ops, reads, and the records where they were', () => {
  root = mkdtempSync(join(tmpdir(), 'split-'))
  mkdirSync(join(root, 'src/store/memory'), { recursive: true })
  writeFileSync(join(root, 'src/store/memory-state.ts'), WHOLE)
  expect(splitMemoryState(root)).toHaveLength(5)
  const read = (path: string) => readFileSync(join(root!, path), 'utf8')
  const maps = read('src/store/memory/maps.ts')
  expect(maps).toContain('export const k = ')
  expect(maps).toContain('export class MemoryMaps {')
  expect(maps).toContain('  protected tenants = new Map<string, string>()\n  protected counts = new Map<')
  expect(maps).toContain('  protected remember(id: string)')
  const checks = read('src/store/memory/checks.ts')
  expect(checks).toContain('export class MemoryChecks extends MemoryMaps {')
  expect(checks).toContain('  protected holds(c: Check): boolean {')
  expect(checks).toContain("import type { Check } from '../../kernel/index.js'")
  const ops = read('src/store/memory/ops.ts')
  expect(ops).toContain('export class MemoryOps extends MemoryChecks {')
  expect(ops).toContain('  apply(op: Op): void {')
  expect(ops).not.toContain('getTenant')
  const reads = read('src/store/memory/reads.ts')
  expect(reads).toContain('export class MemoryReads extends MemoryOps {')
  expect(reads).toContain('  getTenant(\n    id: string,\n  ): string | null {')
  expect(reads).toContain("import { copy } from '../json.js'")
  expect(reads).toContain("import { k } from './maps.js'")
  const state = read('src/store/memory-state.ts')
  expect(state).toContain('export interface StateRecords {')
  expect(state).toContain(
    '/** The whole store. */\nexport class MemoryState extends MemoryReads {\n  records(): StateRecords {',
  )
  expect(state).not.toContain('failedCheck')
  // Split once: a second run finds nothing to do.
  expect(splitMemoryState(root)).toEqual([])
})
