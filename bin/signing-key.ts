import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { isTestSigningKey } from '../src/webhooks/index.js'

/** The file `serve` keeps its webhook signing key in, for a file or PostgreSQL store, when none is given. */
export const DEFAULT_SIGNING_KEY_FILE = '.tokenvault-webhook-signing.pem'

/** Where the server's webhook signing key comes from. */
export interface SigningKeySource {
  /** A file holding an RSA private key, PEM (`--webhook-signing-key-file`). */
  file?: string | undefined
  /** The file created (0600) on first start when none is given. @default DEFAULT_SIGNING_KEY_FILE */
  defaultFile?: string
  /** Whether a missing default file is created with a new key (true) or is an error (false). */
  create: boolean
  /** Whether the published test key is taken (test mode) rather than refused. */
  testMode?: boolean
}

/** A signing key's PEM, checked: an RSA private key, and not the published test key. */
function checked(pem: string, where: string, testMode = false): string {
  let rsa = false
  try {
    rsa = createPrivateKey(pem).asymmetricKeyType === 'rsa'
  } catch {
    // Not a key: refused below.
  }
  if (!rsa)
    throw new Error(`${where} must hold an RSA private key in PEM (e.g. \`openssl genpkey -algorithm RSA\`)`)
  if (!testMode && isTestSigningKey(pem))
    throw new Error(
      `${where} holds the published test signing key: any receiver's check passes a delivery anyone signs with it. Use a key of your own, or --test-mode`,
    )
  return pem
}

/**
 * Writes a new RSA-2048 private key to `file` (PEM, 0600) unless the file exists. The key is
 * written whole to a file of its own first and then linked into place, so a process that starts at
 * the same moment either makes the file or reads the one made, never a part of it.
 */
function createKeyFile(file: string): boolean {
  if (existsSync(file)) return false
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString()
  const staging = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`
  writeFileSync(staging, pem, { mode: 0o600, flag: 'wx' })
  try {
    linkSync(staging, file)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return false
  } finally {
    rmSync(staging, { force: true })
  }
}

/**
 * The webhook signing key (PEM) from a file, or from the default file (created with a new key on
 * first start, readable only by its owner, when `create`). Answers the key and, for the default
 * file, a line that says where it is. The key itself is never printed.
 */
export function loadSigningKey(source: SigningKeySource): { pem: string; note: string | null; file: string } {
  if (source.file) {
    const file = resolve(source.file)
    const where = `--webhook-signing-key-file ${file}`
    return { pem: checked(readFileSync(file, 'utf8'), where, source.testMode), note: null, file }
  }
  const file = resolve(source.defaultFile ?? DEFAULT_SIGNING_KEY_FILE)
  const created = source.create && createKeyFile(file)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    throw new Error(
      `no webhook signing key at ${file}: a server on a file or PostgreSQL store makes it on its first start, or give --webhook-signing-key-file`,
    )
  }
  if (source.create) chmodSync(file, 0o600)
  const pem = checked(text, file, source.testMode)
  const verb = created ? 'created' : 'using'
  return {
    pem,
    note: `webhook signing key: ${verb} ${file} (0600); receivers verify deliveries with its public key (tokenvault webhooks public-key); every server on this store needs the same file`,
    file,
  }
}

/** The public half (SPKI, PEM) of a signing key: what receivers verify `BT-SIGNATURE` with. */
export function publicKeyOf(pem: string): string {
  return createPublicKey(createPrivateKey(pem)).export({ type: 'spki', format: 'pem' }).toString()
}
