import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { StoreError } from '../../src/store/error.js'

/** LMDB's file magic and data format, at the start of each of its two meta pages. */
const MAGIC = 0xbeefc0de
const DATA_VERSION = 2
/** Where the meta starts in a page (after the page header), and its fields from there (64-bit builds). */
const META = 24
const PAGE_SIZE_AT = META + 24
const LAST_PAGE_AT = META + 120
const TXNID_AT = META + 128
const PAGE_SIZES = new Set([4096, 8192, 16384, 32768, 65536])

/**
 * Checks LMDB's data file before LMDB maps it: LMDB trusts the file it opens, and a file that is
 * not one (or a truncated one) would crash the process instead of failing. A missing or empty file
 * is a new store. Otherwise both meta pages must carry LMDB's magic and data version, and the file
 * must hold every page the newer meta names. Throws a `StoreError` (`corrupt`) for anything else.
 */
export function checkDataFile(path: string, dir: string): void {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  try {
    const size = fstatSync(fd).size
    if (size === 0) return
    const refuse = (why: string) =>
      new StoreError(
        'corrupt',
        `fileStore: ${dir} holds a data file that is not a readable tokenvault store (${why})`,
      )
    const page = (offset: number, bytes: number) => {
      const b = Buffer.alloc(bytes)
      return readSync(fd, b, 0, bytes, offset) === bytes ? b : null
    }
    const first = page(0, 256)
    if (!first || first.readUInt32LE(META) !== MAGIC) throw refuse('no LMDB magic')
    if (first.readUInt32LE(META + 4) !== DATA_VERSION) throw refuse('another LMDB data version')
    const psize = first.readUInt32LE(PAGE_SIZE_AT)
    if (!PAGE_SIZES.has(psize) || size < 2 * psize) throw refuse('truncated')
    const second = page(psize, 256)
    if (!second || second.readUInt32LE(META) !== MAGIC || second.readUInt32LE(META + 4) !== DATA_VERSION)
      throw refuse('a damaged meta page')
    const newer = first.readBigUInt64LE(TXNID_AT) >= second.readBigUInt64LE(TXNID_AT) ? first : second
    const lastPage = newer.readBigUInt64LE(LAST_PAGE_AT)
    if (BigInt(size) < (lastPage + 1n) * BigInt(psize)) throw refuse('truncated')
  } finally {
    closeSync(fd)
  }
}
