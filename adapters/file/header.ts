import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { StoreError } from '../../src/store/index.js'

/** LMDB's file magic and data format, at the start of each of its two meta pages. */
const MAGIC = 0xbeefc0de
const DATA_VERSION = 2
/** LMDB's page header (pgno, txnid, pad, flags, lower/upper or overflow page count): 24 bytes. */
const HEADER = 24
const FLAGS_AT = 18
const LOWER_AT = 20
const OVERFLOW_PAGES_AT = 20
/** Where the meta starts in a meta page (after the page header), and its fields from there (64-bit builds). */
const META = HEADER
const PAGE_SIZE_AT = META + 24
/** The two trees a meta roots: the free-page tree, then the main tree (which names the databases). */
const FREE_DB_AT = META + 24
const MAIN_DB_AT = META + 72
const LAST_PAGE_AT = META + 120
const TXNID_AT = META + 128
const PAGE_SIZES = new Set([4096, 8192, 16384, 32768, 65536])
/** A tree record (`MDB_db`): its depth, entry count and root page, by offset. */
const DB_SIZE = 48
const DB_DEPTH_AT = 6
const DB_ENTRIES_AT = 32
const DB_ROOT_AT = 40
const NO_PAGE = 0xffff_ffff_ffff_ffffn
/** Page kinds and node flags (`mdb.c`). */
const P_BRANCH = 0x01
const P_LEAF = 0x02
const P_LEAF2 = 0x20
const F_BIGDATA = 0x01
const F_SUBDATA = 0x02
const F_DUPDATA = 0x04
/** Deeper than this, a tree is damaged (LMDB's own cursor stack is 32 deep). */
const MAX_DEPTH = 32
/** How often the check starts again when another process committed while it read. */
const ATTEMPTS = 5

/** What a data file holds, as far as opening it goes. */
export type DataFile =
  /** No data file: the directory holds no store yet. */
  | { kind: 'absent' }
  /**
   * An LMDB environment whose databases are all this store's (`names`): `marked` when its `meta`
   * database holds a `format` key; `empty` when none of its databases holds a record.
   */
  | { kind: 'lmdb'; marked: boolean; empty: boolean }

/** A tree record read from a meta page or a `F_SUBDATA` node. */
interface Tree {
  root: bigint
  depth: number
  entries: bigint
}

const treeAt = (b: Buffer, at: number): Tree => ({
  root: b.readBigUInt64LE(at + DB_ROOT_AT),
  depth: b.readUInt16LE(at + DB_DEPTH_AT),
  entries: b.readBigUInt64LE(at + DB_ENTRIES_AT),
})

/** Thrown inside the reader for a file that fails a check; the outer loop turns it into a `StoreError`. */
class Refusal extends Error {}

/**
 * Reads LMDB's data file before LMDB maps it, writing nothing: LMDB trusts the file it opens, and a
 * file that is not one (or a truncated one) would crash the process instead of failing, and opening
 * the databases of another program's environment would write into it. A missing file is `absent`.
 * Otherwise both meta pages must carry LMDB's magic and data version (as `mdb_env_open` demands),
 * and the newer one (by txnid, as LMDB picks it) must not name a page the file lacks: every page up
 * to its `last_pg` is there, or else every page a tree of that snapshot reaches (the free-page tree,
 * the main tree, each database's tree and their overflow pages) is. LMDB may count pages in
 * `last_pg` that it allocated and freed within one commit and so never wrote; the file is shorter
 * then, yet LMDB opens and reads it, and so does this check. The main tree's names are returned for
 * `names` to judge. Throws a `StoreError` (`corrupt`) for a file that fails: 0 bytes included (a
 * new store's file is created whole, see `openDatabases`, so an empty one was cut).
 */
export function readDataFile(path: string, dir: string, names: ReadonlySet<string>): DataFile {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' }
    throw error
  }
  try {
    for (let attempt = 1; ; attempt++) {
      const txnids = metaTxnids(fd)
      try {
        return inspect(fd, names)
      } catch (error) {
        if (!(error instanceof Refusal)) throw error
        // Another process may have committed (and reused pages of the snapshot read): read again.
        const now = metaTxnids(fd)
        if (attempt < ATTEMPTS && now !== txnids) continue
        throw new StoreError(
          'corrupt',
          `fileStore: ${dir} holds a data file that is not a readable tokenvault store (${error.message})`,
        )
      }
    }
  } finally {
    closeSync(fd)
  }
}

/** Both meta pages' txnids as one string (a change means a commit happened), or '' if unreadable. */
function metaTxnids(fd: number): string {
  const first = Buffer.alloc(256)
  if (readSync(fd, first, 0, 256, 0) !== 256) return ''
  const psize = first.readUInt32LE(PAGE_SIZE_AT)
  const second = Buffer.alloc(256)
  if (!PAGE_SIZES.has(psize) || readSync(fd, second, 0, 256, psize) !== 256) return ''
  return `${first.readBigUInt64LE(TXNID_AT)}/${second.readBigUInt64LE(TXNID_AT)}`
}

function inspect(fd: number, names: ReadonlySet<string>): DataFile {
  const metaPage = (offset: number) => {
    const b = Buffer.alloc(256)
    return readSync(fd, b, 0, 256, offset) === 256 ? b : null
  }
  const first = metaPage(0)
  if (fstatSync(fd).size === 0) throw new Refusal('truncated: 0 bytes')
  if (!first || first.readUInt32LE(META) !== MAGIC) throw new Refusal('no LMDB magic')
  if (first.readUInt32LE(META + 4) !== DATA_VERSION) throw new Refusal('another LMDB data version')
  const psize = first.readUInt32LE(PAGE_SIZE_AT)
  if (!PAGE_SIZES.has(psize)) throw new Refusal('an unknown page size')
  const second = metaPage(psize)
  if (!second) throw new Refusal('truncated: a meta page is missing')
  if (second.readUInt32LE(META) !== MAGIC || second.readUInt32LE(META + 4) !== DATA_VERSION)
    throw new Refusal('a damaged meta page')
  const newer = first.readBigUInt64LE(TXNID_AT) >= second.readBigUInt64LE(TXNID_AT) ? first : second
  // The size after the metas: a writer writes a commit's pages before its meta.
  const pages = new Pages(fd, psize, BigInt(fstatSync(fd).size) / BigInt(psize))
  const lastPage = newer.readBigUInt64LE(LAST_PAGE_AT)
  const main = treeAt(newer, MAIN_DB_AT)
  const databases = new Map<string, Tree>()
  let foreign = false
  pages.walk(main, (key, flags, data) => {
    const name = key.subarray(0, key.at(-1) === 0 ? -1 : undefined).toString('utf8')
    if (!(flags & F_SUBDATA) || data.length < DB_SIZE || !names.has(name)) foreign = true
    else databases.set(name, treeAt(data, 0))
  })
  if (foreign || databases.size === 0) return { kind: 'lmdb', marked: false, empty: false }
  const meta = databases.get('meta')
  let marked = false
  if (meta) pages.walk(meta, (key) => (marked ||= key.equals(FORMAT_KEY)))
  const empty = [...databases.values()].every((tree) => tree.entries === 0n)
  // Every page up to `last_pg` is there: nothing more to read.
  if (pages.count > lastPage) return { kind: 'lmdb', marked, empty }
  // Some are not: the file holds what LMDB needs when no tree reaches them.
  pages.walk(treeAt(newer, FREE_DB_AT))
  for (const tree of databases.values()) pages.walk(tree)
  return { kind: 'lmdb', marked, empty }
}

const FORMAT_KEY = Buffer.from('format')

/** The pages of the data file, read one at a time; `count` whole pages are there. */
class Pages {
  constructor(
    private readonly fd: number,
    private readonly psize: number,
    readonly count: bigint,
  ) {}

  /** Page `pgno`, refused when the file lacks it (truncated). */
  read(pgno: bigint): Buffer {
    if (pgno < 2n || pgno >= this.count) throw new Refusal(`truncated: page ${pgno} is missing`)
    const b = Buffer.alloc(this.psize)
    if (readSync(this.fd, b, 0, this.psize, Number(pgno) * this.psize) !== this.psize)
      throw new Refusal(`truncated: page ${pgno} is missing`)
    return b
  }

  /**
   * Reads every page of `tree` (and each overflow page its records use), calling `leaf` with each
   * record's key, node flags and data as stored (for `F_BIGDATA` records, the overflow page number).
   */
  walk(tree: Tree, leaf?: (key: Buffer, flags: number, data: Buffer) => void): void {
    if (tree.root === NO_PAGE) return
    if (tree.depth > MAX_DEPTH) throw new Refusal('a damaged tree')
    this.visit(tree.root, 1, tree.depth, leaf)
  }

  private visit(
    pgno: bigint,
    level: number,
    depth: number,
    leaf?: (key: Buffer, flags: number, data: Buffer) => void,
  ): void {
    const page = this.read(pgno)
    const flags = page.readUInt16LE(FLAGS_AT)
    const lower = page.readUInt16LE(LOWER_AT)
    if (level > depth || lower > this.psize - HEADER) throw new Refusal(`a damaged page ${pgno}`)
    if (flags & P_LEAF2) return
    const branch = (flags & P_BRANCH) !== 0
    if (branch === (level === depth) || (!branch && !(flags & P_LEAF)))
      throw new Refusal(`a damaged page ${pgno}`)
    for (let i = 0; i < lower >> 1; i++) {
      const at = page.readUInt16LE(HEADER + 2 * i) + HEADER
      if (at + 8 > this.psize) throw new Refusal(`a damaged page ${pgno}`)
      const lo = page.readUInt16LE(at)
      const hi = page.readUInt16LE(at + 2)
      const nodeFlags = page.readUInt16LE(at + 4)
      const ksize = page.readUInt16LE(at + 6)
      if (branch) {
        this.visit(BigInt(lo) | (BigInt(hi) << 16n) | (BigInt(nodeFlags) << 32n), level + 1, depth, leaf)
        continue
      }
      const size = nodeFlags & F_BIGDATA ? 8 : lo | (hi << 16)
      const start = at + 8 + ksize
      if (start + size > this.psize) throw new Refusal(`a damaged page ${pgno}`)
      const data = page.subarray(start, start + size)
      if (nodeFlags & F_BIGDATA) this.overflow(data.readBigUInt64LE(0))
      else if (nodeFlags & F_SUBDATA && nodeFlags & F_DUPDATA) this.walk(treeAt(data, 0))
      leaf?.(page.subarray(at + 8, at + 8 + ksize), nodeFlags, data)
    }
  }

  /** Checks that every page of the overflow run starting at `pgno` is there. */
  private overflow(pgno: bigint): void {
    const count = BigInt(this.read(pgno).readUInt32LE(OVERFLOW_PAGES_AT))
    if (count > 1n) this.read(pgno + count - 1n)
  }
}

/**
 * The ids of the other processes that have the store in `dir` open, as Linux's `/proc/locks` tells
 * them: LMDB holds a shared lock on the first byte of its lock file for as long as an environment
 * is open. Empty when the store has no lock file, or where `/proc/locks` can't be read (not Linux):
 * then nothing is known, and a caller that needs the store stopped says so in its own words.
 */
export function openedElsewhere(dir: string, locks = '/proc/locks'): number[] {
  let file: { dev: number; ino: number }
  let table: string
  try {
    file = statSync(join(dir, 'lock.mdb'))
    table = readFileSync(locks, 'utf8')
  } catch {
    return []
  }
  // glibc's dev_t: the major in bits 8-19 and 44-63, the minor in bits 0-7 and 20-43 (/proc/locks shows both in hex).
  const major = (Math.floor(file.dev / 2 ** 8) % 2 ** 12) + Math.floor(file.dev / 2 ** 44) * 2 ** 12
  const minor = (file.dev % 2 ** 8) + (Math.floor(file.dev / 2 ** 20) % 2 ** 24) * 2 ** 8
  const device = `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${file.ino}`
  const pids = new Set<number>()
  for (const line of table.split('\n')) {
    const fields = line.replace(/^\d+:\s+(->\s+)?/, '').split(/\s+/)
    // POSIX ADVISORY READ|WRITE pid maj:min:inode start end
    const pid = Number(fields[3])
    if (fields[4] === device && Number.isInteger(pid) && pid !== process.pid) pids.add(pid)
  }
  return [...pids].sort((a, b) => a - b)
}
