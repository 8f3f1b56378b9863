import { randomBytes } from 'node:crypto'
import { chmodSync, closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'

/** Where the server's master key comes from. */
export interface MasterKeySource {
  /** base64 of 32 bytes (`TOKENVAULT_MASTER_KEY`). */
  env?: string | undefined
  /** A file holding the key as base64, or 32 raw bytes (`--master-key-file`). */
  file?: string | undefined
  /** The file created (0600) on first start when neither is given. */
  defaultFile: string
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
export function loadMasterKey(source: MasterKeySource): { key: Buffer; note: string | null } {
  if (source.env) return { key: decode(source.env, 'TOKENVAULT_MASTER_KEY'), note: null }
  if (source.file) {
    const raw = readFileSync(source.file)
    return {
      key: raw.length === 32 ? raw : decode(raw.toString('utf8'), `--master-key-file ${source.file}`),
      note: null,
    }
  }
  const path = resolve(source.defaultFile)
  let created = false
  try {
    const fd = openSync(path, 'wx', 0o600)
    try {
      writeFileSync(fd, `${randomBytes(32).toString('base64')}\n`)
    } finally {
      closeSync(fd)
    }
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
  }
}
