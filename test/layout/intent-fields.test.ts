import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const src = fileURLToPath(new URL('../../src/', import.meta.url))

/** Every `.ts` file under `src/<folder>`, as `folder/…/file.ts`. */
function filesOf(folder: string): string[] {
  const out: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(src, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts')) out.push(path)
    }
  }
  walk(folder)
  return out
}

/** Lines of `src/` that keep intent out of sight: a side table, a set of marked objects, a symbol key, module state. */
const INVISIBLE = /new WeakMap|new WeakSet|Symbol\(|^let /

describe('intent travels in fields', () => {
  it('tokens (the dedup wish, the creator’s preview), encryption (the sealed original) and service keep no invisible mark', () => {
    const found = ['tokens', 'encryption', 'service', 'lifecycle'].flatMap(filesOf).flatMap((file) =>
      readFileSync(join(src, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (INVISIBLE.test(line) ? [`src/${file}:${i + 1}: ${line.trim()}`] : [])),
    )
    expect(found).toEqual([])
  })

  it('the memory store keeps no invisible mark either (its link order is a Map field, dropped with the link)', () => {
    const dir = fileURLToPath(new URL('../../adapters/memory/', import.meta.url))
    const found = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .flatMap((name) =>
        readFileSync(join(dir, name), 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            INVISIBLE.test(line) ? [`adapters/memory/${name}:${i + 1}: ${line.trim()}`] : [],
          ),
      )
    expect(found).toEqual([])
  })

  it('src/encryption imports neither tokens nor search (the service hands it their rules)', () => {
    const found = filesOf('encryption').filter((file) =>
      /from '\.\.\/(tokens|search)\//.test(readFileSync(join(src, file), 'utf8')),
    )
    expect(found).toEqual([])
  })
})
