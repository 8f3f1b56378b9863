import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
} from 'node:fs'
import { join } from 'node:path'
import { type Database, open, type RootDatabase } from 'lmdb'
import type { StoredTransaction } from '../../src/kernel/index.js'
import { StoreError, stagedCharsHeld } from '../../src/store/index.js'
import { openError } from './faults.js'
import { readDataFile } from './header.js'
import { key } from './keys.js'
import { tokenCodec } from './token-codec.js'

/**
 * The format this version writes, kept under `format` in the `meta` database. 3: tokens keep their
 * ciphertext as bytes (`tokenCodec`). A format 2 store (tokens all JSON) reads as it is: its
 * marker is moved to 3 when it opens, so a version that reads only format 2 then refuses it
 * (`schema_newer`) instead of meeting tokens it can't decode. Format 1 was a development build's,
 * without the counts `meta` keeps, and is refused.
 */
export const FORMAT = 3
/** The oldest format this version opens (and moves to `FORMAT`). */
const OLDEST_READ = 2

/** The ordered databases of one store, each keyed as `keys.ts` builds keys (its parts in brackets). */
export interface Databases {
  env: RootDatabase
  /**
   * The id of the newest transaction any process committed, as LMDB's shared lock file holds it
   * (null if it can't be read: then every read takes a fresh snapshot).
   */
  head(): bigint | null
  /** Releases what `head` holds open. */
  release(): void
  /** `[version]`: `format`; `linkSeq`, the last link sequence number. */
  meta: Database
  /** `[id]` → tenant. */
  tenants: Database
  /** `[tenant, id]` → application. */
  applications: Database
  /** `[key hash]` → `{ kind, tenant_id, id }` of the application or session holding that key. */
  keys: Database
  /** `[tenant, id]` → token. */
  tokens: Database
  /**
   * `[tenant, term key, id]` → 1: the tokens carrying each exact term (`termKeysOf`: type,
   * fingerprint, each container, each metadata entry lower-cased, each search-index hash), by id:
   * what `findTokenIds` pages through, lists filter by type or fingerprint with, and the
   * `token.fingerprint_absent` guard reads.
   */
  terms: Database
  /** `[tenant, expires_at, id]` → 1: a tenant's tokens that expire, by time (counts skip the expired). */
  tokenExpiry: Database
  /** `[kind, time, tenant, id]` → `{ tenant_id, id, at }`: what `listExpired` reads, by time. */
  expiring: Database
  /** `[tenant, parent, child]` → `{ association, seq }`. */
  links: Database
  /** `[tenant, parent, seq]` → child id: a parent's children in link order. */
  children: Database
  /** `[tenant, child, parent]` → 1. */
  parents: Database
  /** `[tenant, id]` → transaction. */
  transactions: Database
  /** `[tenant, transaction, token id]` → staged write: a transaction's staged records, by token id. */
  staged: Database
  /** `[tenant, token id]` → lock. */
  locks: Database
  /** `[tenant, id]` → session. */
  sessions: Database
  /** `[tenant, nonce hash]` → session id. */
  nonces: Database
  /** `[tenant or '' for official, id]` → formula. */
  formulas: Database
  /** `[formula id, tenant, reactor id]` → 1. */
  uses: Database
  /** `[tenant, id]` → reactor. */
  reactors: Database
  /** `[tenant, id]` → idempotency record. */
  idempotency: Database
  /** `[tenant, id]` → webhook. */
  webhooks: Database
  /** `[tenant, id]` → client encryption key (private key sealed; see `client-keys.ts`). */
  clientKeys: Database
  /** `[tenant, id]` → pre-configured proxy (configuration sealed; see `proxies.ts`). */
  proxies: Database
  /** `[tenant, id]` → token intent (data sealed; see `token-intents.ts`). */
  tokenIntents: Database
  /** `[tenant, id]` → document head (see `documents.ts`). */
  documents: Database
  /** `[tenant, document, index]` → document chunk (data sealed; see `documents.ts`). */
  documentChunks: Database
  /** `[tenant, id]` → outbox entry (see `outbox.ts`). */
  outbox: Database
  /** `[due_at, tenant, id]` → 1: pending outbox entries by when they are due. */
  outboxDue: Database
  /** `[tenant, id]` → audit log entry (see `logs.ts`). */
  logs: Database
  /** `[tenant, created_at, id]` → 1. */
  logsByTime: Database
  /** `[tenant, entity_type, created_at, id]` → 1. */
  logsByType: Database
  /** `[tenant, entity_type, entity_id, created_at, id]` → 1. */
  logsByEntity: Database
}

/** LMDB's lock file: its magic, and where it keeps the last committed transaction id (64-bit builds). */
const LOCK_MAGIC = 0xbeefc0de
const LOCK_TXNID_AT = 8

/**
 * The descriptors of lock files this process reads the head from, one a file, shared by every store
 * open on it: closing any descriptor of a lock file drops every POSIX lock this process holds on
 * it, LMDB's own included, so one is closed only when the last store using it closes (one store of
 * a directory closing while the heavy lane's still ran let another process reset the reader table).
 */
const lockFiles = new Map<string, { fd: number; users: number; magic: boolean }>()

/** Reads the last committed transaction id from the lock file LMDB maps shared between processes. */
function lockHead(dir: string): { head(): bigint | null; release(): void } {
  const path = join(dir, LOCK_FILE)
  let held = lockFiles.get(path)
  if (!held) {
    let fd: number
    try {
      fd = openSync(path, 'r')
    } catch {
      return { head: () => null, release: () => {} }
    }
    const probe = Buffer.alloc(4)
    const magic = readSync(fd, probe, 0, 4, 0) === 4 && probe.readUInt32LE(0) === LOCK_MAGIC
    held = { fd, users: 0, magic }
    lockFiles.set(path, held)
  }
  const shared = held
  shared.users++
  const buffer = Buffer.alloc(8)
  let released = false
  return {
    head: () =>
      shared.magic && readSync(shared.fd, buffer, 0, 8, LOCK_TXNID_AT) === 8
        ? buffer.readBigUInt64LE(0)
        : null,
    release: () => {
      if (released) return
      released = true
      if (--shared.users > 0) return
      lockFiles.delete(path)
      closeSync(shared.fd)
    },
  }
}

const NAMES = [
  'meta',
  'tenants',
  'applications',
  'keys',
  'tokens',
  'terms',
  'tokenExpiry',
  'expiring',
  'links',
  'children',
  'parents',
  'transactions',
  'staged',
  'locks',
  'sessions',
  'nonces',
  'formulas',
  'uses',
  'reactors',
  'idempotency',
  'webhooks',
  'clientKeys',
  'proxies',
  'tokenIntents',
  'documents',
  'documentChunks',
  'outbox',
  'outboxDue',
  'logs',
  'logsByTime',
  'logsByType',
  'logsByEntity',
] as const satisfies readonly Exclude<keyof Databases, 'env'>[]

/** Files of the environment: LMDB's data file and its lock file (shared by every process). */
export const DATA_FILE = 'data.mdb'
export const LOCK_FILE = 'lock.mdb'

/** This store's database names, as the main tree of its data file holds them. */
const NAME_SET: ReadonlySet<string> = new Set(NAMES)

/**
 * Opens (creating if needed) the LMDB environment in `dir`: the directory 0700, both files 0600
 * (created so before LMDB opens them, so they are never readable by others), every database, and
 * the format marker checked. Nothing in the directory is written before its data file is read and
 * found to be this store's (`readDataFile`): a file LMDB can't use, one cut short, or another
 * program's environment is refused as it is. Only a directory without a data file (nor the lock
 * file a store leaves beside one) becomes a new store, its data file made whole before it takes
 * its name (`createDataFile`). Commits are synchronous (`overlappingSync: false`: a commit resolves
 * once it is on disk) unless `durable` is false. Throws a `StoreError` for a directory or file it
 * can't use: `corrupt` for a file that is not this store's, `schema_newer` for a newer format.
 */
export async function openDatabases(dir: string, durable: boolean): Promise<Databases> {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    let file = readDataFile(join(dir, DATA_FILE), dir, NAME_SET)
    if (file.kind === 'absent') {
      if (existsSync(join(dir, LOCK_FILE)))
        throw new StoreError(
          'corrupt',
          `fileStore: ${dir} holds ${LOCK_FILE} but no ${DATA_FILE}: the store's data file was removed (remove ${LOCK_FILE} too to start a new, empty store there)`,
        )
      await createDataFile(dir, durable)
      file = readDataFile(join(dir, DATA_FILE), dir, NAME_SET)
    }
    if (file.kind !== 'lmdb' || !(file.marked || file.empty))
      throw new StoreError(
        'corrupt',
        `fileStore: ${dir} holds an LMDB environment that is not a tokenvault store`,
      )
    chmodSync(dir, 0o700)
    for (const name of [DATA_FILE, LOCK_FILE]) {
      // Made 0600 before LMDB makes it, but never opened and closed when it is there: closing any
      // descriptor of the lock file drops every lock this process holds on it (POSIX record locks),
      // and with the environment open here already (the heavy lane's thread) another process then
      // took itself for the only one and reset the reader table under this one (MDB_BAD_RSLOT).
      if (!existsSync(join(dir, name))) closeSync(openSync(join(dir, name), 'a', 0o600))
      chmodSync(join(dir, name), 0o600)
    }
  } catch (error) {
    throw openError(error, dir)
  }
  let env: RootDatabase
  try {
    env = open({
      path: dir,
      maxDbs: NAMES.length + 2,
      overlappingSync: false,
      // Commits start when writes are queued, not at the end of an event turn: with event-turn
      // batching, lmdb leaves a promise of its own rejected and unhandled when a commit fails.
      eventTurnBatching: false,
      noSync: !durable,
      keyEncoding: 'binary',
      encoding: 'json',
    })
  } catch (error) {
    throw openError(error, dir)
  }
  const lock = lockHead(dir)
  try {
    const dbs = { env, ...lock } as Databases
    for (const name of NAMES)
      (dbs as unknown as Record<string, Database>)[name] = env.openDB(
        // Tokens keep their ciphertext as bytes (see `tokenCodec`); every other record is JSON.
        name === 'tokens'
          ? // lmdb takes `encoder` per database (its typings leave it out).
            ({ name, keyEncoding: 'binary', encoding: 'binary', encoder: tokenCodec } as { name: string })
          : { name, keyEncoding: 'binary', encoding: 'json' },
      )
    checkFormat(dbs, dir)
    countStagedOnce(dbs)
    return dbs
  } catch (error) {
    lock.release()
    void env.close()
    throw openError(error, dir)
  }
}

const FORMAT_KEY = Buffer.from('format')

/** Refuses an environment that is not this store's (databases but no marker) or of a newer format. */
function checkFormat(dbs: Databases, dir: string): void {
  const format = dbs.meta.get(FORMAT_KEY) as unknown
  if (format === undefined) {
    const empty = NAMES.every((name) => dbs[name].getKeysCount({ limit: 1 }) === 0)
    const foreign = [...dbs.env.getKeys({ limit: 64 })].some((k) => {
      // LMDB names its databases with C strings: a trailing NUL.
      const bytes = Buffer.from(k as Buffer)
      const name = bytes.subarray(0, bytes.at(-1) === 0 ? -1 : undefined).toString('utf8')
      return !(NAMES as readonly string[]).includes(name)
    })
    if (!empty || foreign)
      throw new StoreError(
        'corrupt',
        `fileStore: ${dir} holds an LMDB environment that is not a tokenvault store`,
      )
    dbs.meta.putSync(FORMAT_KEY, FORMAT)
    return
  }
  if (typeof format !== 'number')
    throw new StoreError('corrupt', `fileStore: ${dir} has an unreadable format marker`)
  if (format > FORMAT)
    throw new StoreError(
      'schema_newer',
      `fileStore: ${dir} was written in format ${format}; this version reads format ${FORMAT}`,
    )
  if (format < OLDEST_READ)
    throw new StoreError(
      'corrupt',
      `fileStore: ${dir} was written in format ${format} by a development build; this version reads format ${FORMAT}`,
    )
  // Its records read as they are; from now on it holds tokens only this format reads.
  if (format < FORMAT) dbs.meta.putSync(FORMAT_KEY, FORMAT)
}

/** Set once every tenant's `transaction.staged` count holds its open transactions (see `countStagedOnce`). */
const STAGED_COUNTED_KEY = Buffer.from('counted:transaction.staged')

/**
 * Fills each tenant's `transaction.staged` count from the open transactions a store written before
 * the count existed holds (once: a marker says it was done), in one write transaction that reads the
 * marker again, so two processes opening the store at once fill it once. Without it a transaction
 * open across the upgrade went uncounted, and its end took the count below what others held.
 */
function countStagedOnce(dbs: Databases): void {
  if (dbs.meta.get(STAGED_COUNTED_KEY) !== undefined) return
  dbs.meta.transactionSync(() => {
    if (dbs.meta.get(STAGED_COUNTED_KEY) !== undefined) return
    const sums = new Map<string, number>()
    for (const { value } of dbs.transactions.getRange()) {
      const tx = value as StoredTransaction
      const held = stagedCharsHeld(tx)
      if (held > 0) sums.set(tx.tenant_id, (sums.get(tx.tenant_id) ?? 0) + held)
    }
    // As `countKey('transaction.staged', tenantId)` in apply.ts.
    for (const [tenantId, n] of sums) dbs.meta.put(key('count', 'transaction.staged', tenantId), n)
    dbs.meta.put(STAGED_COUNTED_KEY, 1)
  })
}

/**
 * Makes a new store's data file: an environment of its own under a temporary name, holding the
 * format marker, then linked as `data.mdb` (which fails if another process made one first: then
 * that one is the store). So a data file, once there, is whole, and a crash while making it leaves
 * no `data.mdb` (a file of 0 bytes is refused as cut, never made anew).
 */
async function createDataFile(dir: string, durable: boolean): Promise<void> {
  const temp = join(dir, `.new-${process.pid}-${randomBytes(6).toString('hex')}.mdb`)
  try {
    for (const name of [temp, `${temp}-lock`]) closeSync(openSync(name, 'wx', 0o600))
    const env = open({
      path: temp,
      noSubdir: true,
      maxDbs: 1,
      overlappingSync: false,
      noSync: !durable,
      keyEncoding: 'binary',
      encoding: 'json',
    })
    try {
      env.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' }).putSync(FORMAT_KEY, FORMAT)
    } finally {
      await env.close()
    }
    const target = join(dir, DATA_FILE)
    try {
      linkSync(temp, target)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // A file system without hard links: a rename, when no other process made the file meanwhile.
      if (code !== 'EEXIST' && !existsSync(target)) renameSync(temp, target)
      else if (code !== 'EEXIST') throw error
    }
    if (durable) syncDirectory(dir)
  } finally {
    rmSync(temp, { force: true })
    rmSync(`${temp}-lock`, { force: true })
  }
}

/** Makes a new name in `dir` durable (where the platform lets a directory be synced). */
function syncDirectory(dir: string): void {
  let fd: number | undefined
  try {
    fd = openSync(dir, 'r')
    fsyncSync(fd)
  } catch {
    // Windows can't open a directory: its file system orders the name with the file.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}
