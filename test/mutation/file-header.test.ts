import * as fs from 'node:fs'
import { join } from 'node:path'
import { open as openLmdb } from 'lmdb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { readDataFile } from '../../adapters/file/header.js'
import { isStoreError } from '../../src/store/index.js'
import { tempDir } from '../file/helpers.js'

/**
 * The file store's header check (`adapters/file/header.ts`) on its own, on LMDB environments made
 * here and then damaged byte by byte: a data file that is not a tokenvault store's (another
 * program's environment, no LMDB magic, another data version, an unknown page size), one cut short
 * (0 bytes, a meta page missing, a page a tree reaches missing), and a damaged tree are refused as
 * `corrupt`; every file LMDB would open (the newer meta as LMDB picks it, pages counted in
 * `last_pg` but reached by no tree) is read. Reads of the file can be watched, and the file changed
 * between them (as another process committing would), through the hook below.
 */

/** Called before each `readSync` of the check, with the position read; `open` the files opened and not closed. */
const hook: { beforeRead: ((position: number) => void) | undefined; open: Set<number> } = {
  beforeRead: undefined,
  open: new Set(),
}
vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>()
  return {
    ...real,
    readSync: (fd: number, buffer: Buffer, offset: number, length: number, position: number) => {
      hook.beforeRead?.(position)
      return real.readSync(fd, buffer, offset, length, position)
    },
    openSync: (...args: Parameters<typeof real.openSync>) => {
      const fd = real.openSync(...args)
      hook.open.add(fd)
      return fd
    },
    closeSync: (fd: number) => {
      hook.open.delete(fd)
      real.closeSync(fd)
    },
  }
})
afterEach(() => {
  hook.beforeRead = undefined
})

const PAGE = 4096
/** Offsets in a meta page (after its 24-byte page header), and in a tree record. */
const M = { magic: 24, version: 28, psize: 48, free: 48, main: 96, last: 144, txnid: 152 }
const DB = { depth: 6, entries: 32, root: 40 }
const NAMES = new Set(['meta', 'tokens', 'dups', 'big', 'empty', 'other'])

interface Env {
  dir: string
  file: string
}

type Fill = (env: ReturnType<typeof openLmdb>) => void

/** An LMDB environment made by `fill` in a fresh directory, closed. */
async function lmdbEnv(fill: Fill, pageSize?: number): Promise<Env> {
  const dir = join(await tempDir(), 'store')
  const env = openLmdb({
    path: dir,
    maxDbs: 8,
    keyEncoding: 'binary',
    encoding: 'json',
    noSync: true,
    ...(pageSize ? { pageSize } : {}),
  })
  env.transactionSync(() => fill(env))
  await env.close()
  return { dir, file: join(dir, 'data.mdb') }
}

const db = (env: ReturnType<typeof openLmdb>, name: string, more: object = {}) =>
  env.openDB({ name, keyEncoding: 'binary', encoding: 'json', ...more } as { name: string })

/** A store's environment: the format marker, 300 tokens (a tree with branch pages), an empty database. */
const storeFill: Fill = (env) => {
  db(env, 'meta').putSync(Buffer.from('format'), 9)
  const tokens = db(env, 'tokens')
  for (let i = 0; i < 300; i++) tokens.putSync(Buffer.from(`t${String(i).padStart(4, '0')}`), 'x'.repeat(200))
  db(env, 'empty')
}

/** A store's environment with a value on overflow pages (`big`) and a key with 300 values (`dups`). */
const richFill: Fill = (env) => {
  storeFill(env)
  db(env, 'big').putSync(Buffer.from('large'), 'y'.repeat(9000))
  const dups = env.openDB({ name: 'dups', dupSort: true, keyEncoding: 'binary', encoding: 'binary' })
  for (let i = 0; i < 300; i++) dups.putSync(Buffer.from('k'), Buffer.from(`v${String(i).padStart(5, '0')}`))
}

const read = (env: Env, names: ReadonlySet<string> = NAMES) => readDataFile(env.file, env.dir, names)

function refusal(env: Env, names: ReadonlySet<string> = NAMES): string {
  try {
    read(env, names)
  } catch (error) {
    expect(isStoreError(error, 'corrupt')).toBe(true)
    const message = (error as Error).message
    const start = `fileStore: ${env.dir} holds a data file that is not a readable tokenvault store (`
    expect(message.startsWith(start) && message.endsWith(')')).toBe(true)
    return message.slice(start.length, -1)
  }
  throw new Error('not refused')
}

/** The data file's bytes, changed by `edit` and written back. */
function edit(env: Env, change: (b: Buffer) => unknown): void {
  const bytes = fs.readFileSync(env.file)
  const out = change(bytes)
  fs.writeFileSync(env.file, Buffer.isBuffer(out) ? out : bytes)
}

/** Both meta pages a copy of the newer one, the second (`ahead`) or the first one txnid ahead. */
function sameMetas(b: Buffer, ahead: 0 | 1 | null): void {
  const good = newer(b)
  b.copy(b, (1 - good) * PAGE, good * PAGE, good * PAGE + PAGE)
  if (ahead !== null) b.writeBigUInt64LE(txnid(b, ahead) + 1n, ahead * PAGE + M.txnid)
}

const txnid = (b: Buffer, meta: number) => b.readBigUInt64LE(meta * PAGE + M.txnid)
/** The newer meta page (0 or 1), as LMDB picks it. */
const newer = (b: Buffer) => (txnid(b, 0) >= txnid(b, 1) ? 0 : 1)
const metaAt = (b: Buffer, meta = newer(b)) => meta * PAGE
/** Counts one more page in the newer meta's `last_pg` than the file holds: the trees are then walked. */
const pastLast = (b: Buffer) => b.writeBigUInt64LE(BigInt(b.length / PAGE) + 3n, metaAt(b) + M.last)
const mainRoot = (b: Buffer) => Number(b.readBigUInt64LE(metaAt(b) + M.main + DB.root))

/** The offset of the node of database `name` in the main tree's root (a leaf). */
function nodeOf(b: Buffer, name: string): number {
  const page = mainRoot(b) * PAGE
  const key = b.indexOf(Buffer.from(name), page)
  expect(key > page && key < page + PAGE).toBe(true)
  return key - 8
}
/** The offset of the tree record of database `name`. */
const recordOf = (b: Buffer, name: string) => nodeOf(b, name) + 8 + b.readUInt16LE(nodeOf(b, name) + 6)
const rootOf = (b: Buffer, name: string) => Number(b.readBigUInt64LE(recordOf(b, name) + DB.root))
/** The offset of the first node of page `pgno`. */
const firstNode = (b: Buffer, pgno: number) => pgno * PAGE + 24 + b.readUInt16LE(pgno * PAGE + 24)

describe('the header check (readDataFile)', () => {
  it('answers absent for a missing file, and throws any other open error as it is', async () => {
    const dir = await tempDir()
    expect(readDataFile(join(dir, 'data.mdb'), dir, NAMES)).toEqual({ kind: 'absent' })
    fs.writeFileSync(join(dir, 'plain'), 'x')
    const error = (() => {
      try {
        readDataFile(join(dir, 'plain', 'data.mdb'), dir, NAMES)
      } catch (e) {
        return e as NodeJS.ErrnoException
      }
      return undefined
    })()
    expect(error?.code).toBe('ENOTDIR')
    expect(isStoreError(error, 'corrupt')).toBe(false)
  })

  it("reads a store's environment: marked by the format key, empty when no database holds a record", async () => {
    expect(read(await lmdbEnv(storeFill))).toEqual({ kind: 'lmdb', marked: true, empty: false })
    expect(read(await lmdbEnv(richFill))).toEqual({ kind: 'lmdb', marked: true, empty: false })
    expect(read(await lmdbEnv(storeFill, 8192))).toEqual({ kind: 'lmdb', marked: true, empty: false })
    const unmarked = await lmdbEnv((env) => {
      db(env, 'meta').putSync(Buffer.from('formats'), 1)
      db(env, 'meta').putSync(Buffer.from('form'), 1)
    })
    expect(read(unmarked)).toEqual({ kind: 'lmdb', marked: false, empty: false })
    const empty = await lmdbEnv((env) => {
      db(env, 'meta')
      db(env, 'tokens')
    })
    expect(read(empty)).toEqual({ kind: 'lmdb', marked: false, empty: true })
    const someEmpty = await lmdbEnv((env) => {
      db(env, 'empty')
      db(env, 'tokens').putSync(Buffer.from('a'), 1)
    })
    expect(read(someEmpty)).toEqual({ kind: 'lmdb', marked: false, empty: false })
    const onlyFormat = await lmdbEnv((env) => db(env, 'meta').putSync(Buffer.from('format'), 9))
    expect(read(onlyFormat)).toEqual({ kind: 'lmdb', marked: true, empty: false })
  })

  it("reads another program's environment as not this store's, whatever its meta database says", async () => {
    const rootKey = await lmdbEnv((env) => {
      storeFill(env)
      env.putSync(Buffer.from('hello'), 'world')
    })
    expect(read(rootKey)).toEqual({ kind: 'lmdb', marked: false, empty: false })
    const theirs = await lmdbEnv((env) => {
      storeFill(env)
      db(env, 'theirs').putSync(Buffer.from('k'), 'v')
    })
    expect(read(theirs)).toEqual({ kind: 'lmdb', marked: false, empty: false })
    expect(read(await lmdbEnv(storeFill), new Set(['meta', 'tokens']))).toEqual({
      kind: 'lmdb',
      marked: false,
      empty: false,
    })
    expect(read(await lmdbEnv(() => {}))).toEqual({ kind: 'lmdb', marked: false, empty: false })
    // A database record too short to be one.
    const short = await lmdbEnv(storeFill)
    edit(short, (b) => {
      b.writeUInt16LE(47, nodeOf(b, 'empty'))
    })
    expect(read(short)).toEqual({ kind: 'lmdb', marked: false, empty: false })
    // A database name's node without F_SUBDATA.
    const plain = await lmdbEnv(storeFill)
    edit(plain, (b) => {
      const flagsAt = nodeOf(b, 'empty') + 4
      b.writeUInt16LE(b.readUInt16LE(flagsAt) & ~0x02, flagsAt)
    })
    expect(read(plain)).toEqual({ kind: 'lmdb', marked: false, empty: false })
  })

  it('refuses a file of 0 bytes, without LMDB magic, of another data version or page size', async () => {
    const cut = await lmdbEnv(storeFill)
    fs.truncateSync(cut.file, 0)
    expect(refusal(cut)).toBe('truncated: 0 bytes')
    const junk = await lmdbEnv(storeFill)
    fs.writeFileSync(junk.file, 'not an lmdb file')
    expect(refusal(junk)).toBe('no LMDB magic')
    const zeros = await lmdbEnv(storeFill)
    fs.writeFileSync(zeros.file, Buffer.alloc(3 * PAGE))
    expect(refusal(zeros)).toBe('no LMDB magic')
    const version = await lmdbEnv(storeFill)
    edit(version, (b) => b.writeUInt32LE(1, M.version))
    expect(refusal(version)).toBe('another LMDB data version')
    for (const size of [0, 4095, 5000, 2048, 131072]) {
      const pageSize = await lmdbEnv(storeFill)
      edit(pageSize, (b) => b.writeUInt32LE(size, M.psize))
      expect({ size, reason: refusal(pageSize) }).toEqual({ size, reason: 'an unknown page size' })
    }
  })

  it('refuses a file without its second meta page, or with a damaged one', async () => {
    const cut = await lmdbEnv(storeFill)
    fs.truncateSync(cut.file, PAGE + 255)
    expect(refusal(cut)).toBe('truncated: a meta page is missing')
    const magic = await lmdbEnv(storeFill)
    edit(magic, (b) => b.writeUInt32LE(0xbeefc0df, PAGE + M.magic))
    expect(refusal(magic)).toBe('a damaged meta page')
    const version = await lmdbEnv(storeFill)
    edit(version, (b) => b.writeUInt32LE(3, PAGE + M.version))
    expect(refusal(version)).toBe('a damaged meta page')
    // The first meta page's size is the one used: the second's is not read.
    const second = await lmdbEnv(storeFill)
    edit(second, (b) => b.writeUInt32LE(5000, PAGE + M.psize))
    expect(read(second)).toEqual({ kind: 'lmdb', marked: true, empty: false })
  })

  it('reads the newer meta page by txnid (the first on a tie), as LMDB does; the older one may be anything', async () => {
    for (const [damaged, ahead] of [
      [0, 1],
      [1, 0],
    ] as const) {
      const env = await lmdbEnv(storeFill)
      edit(env, (b) => {
        sameMetas(b, ahead)
        b.writeBigUInt64LE(99999n, damaged * PAGE + M.main + DB.root)
      })
      expect({ damaged, file: read(env) }).toEqual({
        damaged,
        file: { kind: 'lmdb', marked: true, empty: false },
      })
    }
    const tieSecond = await lmdbEnv(storeFill)
    edit(tieSecond, (b) => {
      sameMetas(b, null)
      b.writeBigUInt64LE(99999n, PAGE + M.main + DB.root)
    })
    expect(read(tieSecond)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    const tieFirst = await lmdbEnv(storeFill)
    edit(tieFirst, (b) => {
      sameMetas(b, null)
      b.writeBigUInt64LE(99999n, M.main + DB.root)
    })
    expect(refusal(tieFirst)).toBe('truncated: page 99999 is missing')
  })

  it('refuses a main tree rooted on a meta page or past the end of the file', async () => {
    for (const root of [0, 1]) {
      const env = await lmdbEnv(storeFill)
      edit(env, (b) => b.writeBigUInt64LE(BigInt(root), metaAt(b) + M.main + DB.root))
      expect(refusal(env)).toBe(`truncated: page ${root} is missing`)
    }
    const env = await lmdbEnv(storeFill)
    let count = 0
    edit(env, (b) => {
      count = b.length / PAGE
      b.writeBigUInt64LE(BigInt(count), metaAt(b) + M.main + DB.root)
    })
    expect(refusal(env)).toBe(`truncated: page ${count} is missing`)
    // The last whole page is read; a part of a page is no page.
    const partial = await lmdbEnv(storeFill)
    let last = 0
    edit(partial, (b) => {
      last = b.length / PAGE
      const root = mainRoot(b)
      const grown = Buffer.concat([b, b.subarray(root * PAGE, root * PAGE + PAGE)])
      grown.writeBigUInt64LE(BigInt(last), metaAt(grown) + M.main + DB.root)
      grown.writeBigUInt64LE(BigInt(last), metaAt(grown) + M.last)
      return grown
    })
    expect(read(partial)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    fs.truncateSync(partial.file, last * PAGE + PAGE - 1)
    expect(refusal(partial)).toBe(`truncated: page ${last} is missing`)
  })

  it("reads every page up to last_pg's without walking the databases; short of it, walks every tree", async () => {
    // Every page is there: a database's root is not read.
    const whole = await lmdbEnv(storeFill)
    edit(whole, (b) => b.writeBigUInt64LE(99999n, recordOf(b, 'tokens') + DB.root))
    expect(read(whole)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    // last_pg one past the file: read then.
    const exact = await lmdbEnv(storeFill)
    edit(exact, (b) => {
      b.writeBigUInt64LE(BigInt(b.length / PAGE), metaAt(b) + M.last)
      b.writeBigUInt64LE(99999n, recordOf(b, 'tokens') + DB.root)
    })
    expect(refusal(exact)).toBe('truncated: page 99999 is missing')
    // Pages counted in last_pg that no tree reaches: read.
    const short = await lmdbEnv(richFill)
    edit(short, pastLast)
    expect(read(short)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    const free = await lmdbEnv(richFill)
    edit(free, (b) => {
      pastLast(b)
      b.writeBigUInt64LE(99999n, metaAt(b) + M.free + DB.root)
    })
    expect(refusal(free)).toBe('truncated: page 99999 is missing')
    for (const name of ['tokens', 'big', 'dups']) {
      const env = await lmdbEnv(richFill)
      edit(env, (b) => {
        pastLast(b)
        b.writeBigUInt64LE(99999n, recordOf(b, name) + DB.root)
      })
      expect({ name, reason: refusal(env) }).toEqual({ name, reason: 'truncated: page 99999 is missing' })
    }
  })

  it('refuses a data file cut by the pages a tree still uses', async () => {
    const env = await lmdbEnv(richFill)
    const size = fs.statSync(env.file).size
    fs.truncateSync(env.file, size - PAGE)
    expect(refusal(env)).toMatch(/^truncated: page \d+ is missing$/)
  })

  it('follows branch pages to every leaf, and refuses a child past the end', async () => {
    const env = await lmdbEnv(richFill)
    edit(env, (b) => {
      pastLast(b)
      expect(b.readUInt16LE(recordOf(b, 'tokens') + DB.depth)).toBeGreaterThan(1)
      const root = rootOf(b, 'tokens')
      // The last child of the root: the nodes' offsets are in order of the pointers.
      const count = b.readUInt16LE(root * PAGE + 20) >> 1
      const node = root * PAGE + 24 + b.readUInt16LE(root * PAGE + 24 + 2 * (count - 1))
      b.writeUInt16LE(0x9999, node)
      b.writeUInt16LE(0, node + 2)
      b.writeUInt16LE(0, node + 4)
    })
    expect(refusal(env)).toBe(`truncated: page ${0x9999} is missing`)
    for (const [field, add] of [
      [2, 0x1_0000],
      [4, 0x1_0000_0000],
    ] as const) {
      const high = await lmdbEnv(richFill)
      let lo = 0
      edit(high, (b) => {
        pastLast(b)
        const node = firstNode(b, rootOf(b, 'tokens'))
        lo = b.readUInt16LE(node)
        b.writeUInt16LE(1, node + field)
      })
      expect({ field, reason: refusal(high) }).toEqual({
        field,
        reason: `truncated: page ${lo + add} is missing`,
      })
    }
  })

  it('checks every overflow page of a large value, and the sub-tree of a key with many values', async () => {
    const missing = await lmdbEnv(richFill)
    edit(missing, (b) => {
      pastLast(b)
      const leaf = firstNode(b, rootOf(b, 'big'))
      b.writeBigUInt64LE(99999n, leaf + 8 + 'large'.length)
    })
    expect(refusal(missing)).toBe('truncated: page 99999 is missing')
    const long = await lmdbEnv(richFill)
    let run = 0
    edit(long, (b) => {
      pastLast(b)
      const leaf = firstNode(b, rootOf(b, 'big'))
      const first = Number(b.readBigUInt64LE(leaf + 8 + 'large'.length))
      const pages = b.length / PAGE
      run = pages - first
      // The run as long as the file (its last page the file's last): read; one page longer: refused.
      b.writeUInt32LE(run, first * PAGE + 20)
    })
    expect(read(long)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    edit(long, (b) => {
      const leaf = firstNode(b, rootOf(b, 'big'))
      const first = Number(b.readBigUInt64LE(leaf + 8 + 'large'.length))
      b.writeUInt32LE(run + 1, first * PAGE + 20)
    })
    expect(refusal(long)).toMatch(/^truncated: page \d+ is missing$/)
    const dups = await lmdbEnv(richFill)
    edit(dups, (b) => {
      pastLast(b)
      const node = firstNode(b, rootOf(b, 'dups'))
      expect(b.readUInt16LE(node + 4) & 0x06).toBe(0x06)
      b.writeBigUInt64LE(99999n, node + 8 + 1 + DB.root)
    })
    expect(refusal(dups)).toBe('truncated: page 99999 is missing')
    // A large value in the meta database: its overflow pages are checked as the meta is read.
    const metaBig = await lmdbEnv((env) => {
      db(env, 'meta').putSync(Buffer.from('format'), 9)
      db(env, 'meta').putSync(Buffer.from('note'), 'z'.repeat(9000))
    })
    expect(read(metaBig)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    edit(metaBig, (b) => {
      const root = rootOf(b, 'meta')
      const key = b.indexOf(Buffer.from('note'), root * PAGE)
      b.writeBigUInt64LE(99999n, key + 4)
    })
    expect(refusal(metaBig)).toBe('truncated: page 99999 is missing')
  })

  it('reads an overflow run at page 2 that claims 0 or 1 pages: it names no page the file lacks', async () => {
    // LMDB writes no run of 0 pages, but a damaged file may hold one; what the check promises is
    // that no page the run names is missing, and a run of 0 or 1 pages names only its first page.
    for (const count of [0, 1]) {
      const env = await lmdbEnv(richFill)
      edit(env, (b) => {
        // Page 2 is the main tree's root in the files made here: moved to a page appended at the end.
        expect(mainRoot(b)).toBe(2)
        const moved = b.length / PAGE
        const out = Buffer.concat([b, b.subarray(2 * PAGE, 3 * PAGE)])
        out.writeBigUInt64LE(BigInt(moved), moved * PAGE)
        out.writeBigUInt64LE(BigInt(moved), metaAt(out) + M.main + DB.root)
        // Page 2 made the first page of the large value's run: its page number, P_OVERFLOW, its count.
        out.fill(0, 2 * PAGE, 3 * PAGE)
        out.writeBigUInt64LE(2n, 2 * PAGE)
        out.writeUInt16LE(0x04, 2 * PAGE + 18)
        out.writeUInt32LE(count, 2 * PAGE + 20)
        out.writeBigUInt64LE(2n, firstNode(out, rootOf(out, 'big')) + 8 + 'large'.length)
        pastLast(out)
        return out
      })
      expect(read(env)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    }
  })

  it('refuses damaged trees: too deep, a depth that is not the tree’s, a page of no kind, nodes out of the page', async () => {
    const damaged = async (change: (b: Buffer) => void) => {
      const env = await lmdbEnv(storeFill)
      let root = 0
      edit(env, (b) => {
        root = mainRoot(b)
        change(b)
      })
      return { reason: refusal(env), root }
    }
    const depth = (value: number) => (b: Buffer) => b.writeUInt16LE(value, metaAt(b) + M.main + DB.depth)
    expect((await damaged(depth(33))).reason).toBe('a damaged tree')
    for (const value of [0, 2, 32]) {
      const { reason, root } = await damaged(depth(value))
      expect({ value, reason }).toEqual({ value, reason: `a damaged page ${root}` })
    }
    const pageFlags = (value: number) => (b: Buffer) => b.writeUInt16LE(value, mainRoot(b) * PAGE + 18)
    for (const value of [0, 0x01, 0x03, 0x04]) {
      const { reason, root } = await damaged(pageFlags(value))
      expect({ value, reason }).toEqual({ value, reason: `a damaged page ${root}` })
    }
    const lower = (value: number) => (b: Buffer) => b.writeUInt16LE(value, mainRoot(b) * PAGE + 20)
    const tooMany = await damaged(lower(PAGE - 24 + 2))
    expect(tooMany.reason).toBe(`a damaged page ${tooMany.root}`)
    const pointer = (value: number) => (b: Buffer) => b.writeUInt16LE(value, mainRoot(b) * PAGE + 24)
    for (const value of [PAGE - 24 - 7, PAGE]) {
      const { reason, root } = await damaged(pointer(value))
      expect({ value, reason }).toEqual({ value, reason: `a damaged page ${root}` })
    }
    const dataSize = (b: Buffer) => {
      const node = firstNode(b, mainRoot(b))
      const ksize = b.readUInt16LE(node + 6)
      b.writeUInt16LE(PAGE - (node % PAGE) - 8 - ksize + 1, node)
    }
    const big = await damaged(dataSize)
    expect(big.reason).toBe(`a damaged page ${big.root}`)
    const dataHigh = await damaged((b) => b.writeUInt16LE(1, firstNode(b, mainRoot(b)) + 2))
    expect(dataHigh.reason).toBe(`a damaged page ${dataHigh.root}`)
  })

  it('reads a node that ends at the end of its page, and skips a page of fixed-size values', async () => {
    // LMDB packs nodes from the end of a page: one ends where the page does.
    // LMDB leaves the last byte of a page unused; a node moved one byte on to end where the page does is read.
    const env = await lmdbEnv(storeFill)
    edit(env, (b) => {
      const root = mainRoot(b)
      for (let i = 0; i < b.readUInt16LE(root * PAGE + 20) >> 1; i++) {
        const pointer = root * PAGE + 24 + 2 * i
        const node = root * PAGE + 24 + b.readUInt16LE(pointer)
        const end = node + 8 + b.readUInt16LE(node + 6) + b.readUInt16LE(node)
        if (end !== root * PAGE + PAGE - 1) continue
        b.copy(b, node + 1, node, end)
        b.writeUInt16LE(b.readUInt16LE(pointer) + 1, pointer)
        return
      }
      throw new Error('no node ends at the last byte but one')
    })
    expect(read(env)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    const fixed = await lmdbEnv(storeFill)
    edit(fixed, (b) => {
      const root = rootOf(b, 'meta')
      b.writeUInt16LE(b.readUInt16LE(root * PAGE + 18) | 0x20, root * PAGE + 18)
    })
    expect(read(fixed)).toEqual({ kind: 'lmdb', marked: false, empty: false })
  })

  it('reads again when another process committed while it read, up to five times', async () => {
    const env = await lmdbEnv(storeFill)
    const good = fs.readFileSync(env.file)
    sameMetas(good, 1)
    const bad = Buffer.from(good)
    bad.writeBigUInt64LE(99999n, PAGE + M.main + DB.root)
    fs.writeFileSync(env.file, bad)
    // A commit lands after the first attempt found a page missing: the second meta's txnid moved.
    const committed = Buffer.from(good)
    committed.writeBigUInt64LE(txnid(good, 1) + 10n, PAGE + M.txnid)
    let metaReads = 0
    hook.beforeRead = (position) => {
      if (position !== 0) return
      metaReads++
      if (metaReads === 3) fs.writeFileSync(env.file, committed)
    }
    expect(read(env)).toEqual({ kind: 'lmdb', marked: true, empty: false })
    expect(metaReads).toBe(5)

    // A file that stays damaged is read once more (to see no commit), then refused.
    fs.writeFileSync(env.file, bad)
    metaReads = 0
    hook.beforeRead = (position) => {
      if (position === 0) metaReads++
    }
    expect(refusal(env)).toBe('truncated: page 99999 is missing')
    expect(metaReads).toBe(3)

    // Commits that never stop: five attempts, then refused.
    let tick = 0n
    metaReads = 0
    hook.beforeRead = (position) => {
      if (position !== 0) return
      metaReads++
      const now = fs.readFileSync(env.file)
      now.writeBigUInt64LE(txnid(bad, 1) + ++tick, PAGE + M.txnid)
      fs.writeFileSync(env.file, now)
    }
    expect(refusal(env)).toBe('truncated: page 99999 is missing')
    expect(metaReads).toBe(5 * 3)
  })

  it('refuses a page the file lost between its size and its read (cut meanwhile)', async () => {
    const env = await lmdbEnv(storeFill)
    const root = mainRoot(fs.readFileSync(env.file))
    let cut = false
    hook.beforeRead = (position) => {
      if (position !== root * PAGE || cut) return
      cut = true
      fs.truncateSync(env.file, 2 * PAGE)
    }
    expect(refusal(env)).toBe(`truncated: page ${root} is missing`)
  })

  it('throws a read error as it is, not as a damaged file', async () => {
    const env = await lmdbEnv(storeFill)
    const root = mainRoot(fs.readFileSync(env.file))
    const failure = Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' })
    hook.beforeRead = (position) => {
      if (position === root * PAGE) throw failure
    }
    expect(() => read(env)).toThrow(failure)
  })

  it('closes the data file it opened, whatever it answers', async () => {
    const env = await lmdbEnv(storeFill)
    hook.open.clear()
    expect(read(env).kind).toBe('lmdb')
    expect(hook.open.size).toBe(0)
    edit(env, (b) => b.writeUInt32LE(1, M.version))
    hook.open.clear()
    expect(refusal(env)).toBe('another LMDB data version')
    expect(hook.open.size).toBe(0)
  })

  it('reads a database name stored without a closing NUL (as LMDB itself stores names)', async () => {
    const env = await lmdbEnv(storeFill)
    edit(env, (b) => {
      const node = nodeOf(b, 'empty')
      const ksize = b.readUInt16LE(node + 6)
      expect(b[node + 8 + ksize - 1]).toBe(0)
      b.copy(b, node + 8 + ksize - 1, node + 8 + ksize, node + 8 + ksize + 48)
      b.writeUInt16LE(ksize - 1, node + 6)
    })
    expect(read(env)).toEqual({ kind: 'lmdb', marked: true, empty: false })
  })

  it('reads the pointers of a page up to the page end, and no further', async () => {
    // A page of zeros whose pointers fill it: every one names an empty record, not a database.
    const full = await lmdbEnv(storeFill)
    edit(full, (b) => {
      const root = mainRoot(b) * PAGE
      b.fill(0, root + 24, root + PAGE)
      b.writeUInt16LE(PAGE - 24, root + 20)
    })
    expect(read(full)).toEqual({ kind: 'lmdb', marked: false, empty: false })
    const over = await lmdbEnv(storeFill)
    let root = 0
    edit(over, (b) => {
      root = mainRoot(b)
      b.fill(0, root * PAGE + 24, root * PAGE + PAGE)
      b.writeUInt16LE(PAGE - 24 + 2, root * PAGE + 20)
    })
    expect(refusal(over)).toBe(`a damaged page ${root}`)
  })

  it('refuses a branch page below the depth its tree records (a loop included)', async () => {
    const env = await lmdbEnv(storeFill)
    let root = 0
    edit(env, (b) => {
      root = mainRoot(b)
      const page = root * PAGE
      b.writeUInt16LE(0x01, page + 18)
      b.writeUInt16LE(2, page + 20)
      const node = page + 24 + b.readUInt16LE(page + 24)
      b.writeUInt16LE(root, node)
      b.writeUInt16LE(0, node + 2)
      b.writeUInt16LE(0, node + 4)
      b.writeUInt16LE(0, metaAt(b) + M.main + DB.depth)
    })
    expect(refusal(env)).toBe(`a damaged page ${root}`)
  })
})
