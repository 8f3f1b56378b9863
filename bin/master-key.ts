import { randomBytes } from 'node:crypto'
import { chmodSync, closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { localMasterKey } from '../src/encryption/index.js'

/**
 * Ids of master keys that were published with tokenvault's source: `.tokenvault.key` was once
 * committed to its repository, so every clone started its file or PostgreSQL store under the same
 * key, and whoever has the source can open such a store. Only the id (a hash of the key) is kept.
 */
const PUBLISHED_KEY_IDS = new Set(['local:5cc933a64d75125b'])

/** Whether `key` is a master key published with tokenvault's source (see PUBLISHED_KEY_IDS). */
export function isPublishedKey(key: Uint8Array): boolean {
  return PUBLISHED_KEY_IDS.has(localMasterKey(key).keyId)
}

/** Where the server's master key comes from. */
export interface MasterKeySource {
  /** base64 of 32 bytes (`TOKENVAULT_MASTER_KEY`). */
  env?: string | undefined
  /** A file holding the key as base64, or 32 raw bytes (`--master-key-file`). */
  file?: string | undefined
  /** The file created (0600) on first start when neither is given. */
  defaultFile: string
  /** Whether a missing default file is created with a new key (true) or is an error (false). */
  create?: boolean
}

function decode(text: string, where: string): Buffer {
  const trimmed = text.trim()
  const bytes = Buffer.from(trimmed, 'base64')
  if (bytes.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    throw new Error(`${where} must hold a 32-byte key in base64 (e.g. \`openssl rand -base64 32\`)`)
  }
  return bytes
}

/**
 * The master key from the environment, a file, or the default file (created with a new random key
 * on first start, readable only by its owner). Answers the key and, when it created or read the
 * default file, a line that says where the key is. The key itself is never printed.
 */
export function loadMasterKey(source: MasterKeySource): {
  key: Buffer
  note: string | null
  /** The file the key came from; null when it came from the environment. */
  file: string | null
} {
  if (source.env) return { key: decode(source.env, 'TOKENVAULT_MASTER_KEY'), note: null, file: null }
  if (source.file) return { key: readKeyFile(source.file), note: null, file: resolve(source.file) }
  const path = resolve(source.defaultFile)
  if (source.create === false) return { key: readKeyFile(path), note: null, file: path }
  let created = false
  try {
    writeNewKeyFile(path)
    created = true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  chmodSync(path, 0o600)
  const key = decode(readFileSync(path, 'utf8'), path)
  const verb = created ? 'created' : 'using'
  return {
    key,
    note: `master key: ${verb} ${path} (0600); keep it apart from the data and its backups — without it the data can't be read`,
    file: path,
  }
}

/** A key file's key: 32 raw bytes, or 32 bytes in base64. */
export function readKeyFile(file: string): Buffer {
  const raw = readFileSync(file)
  return raw.length === 32 ? raw : decode(raw.toString('utf8'), `--master-key-file ${file}`)
}

/** Writes a new random key to `file` (base64, 0600); fails when the file exists. */
export function writeNewKeyFile(file: string): Buffer {
  const key = randomBytes(32)
  const fd = openSync(file, 'wx', 0o600)
  try {
    writeFileSync(fd, `${key.toString('base64')}\n`)
  } finally {
    closeSync(fd)
  }
  return key
}
