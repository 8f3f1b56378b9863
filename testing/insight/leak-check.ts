import type { LeakEncoding } from './encodings.js'
import type { RawFinding } from './leak-index.js'

/** What a leak check searches: an index of plaintext forms (`LeakIndex`, `LeakLayers`). */
export interface Searchable {
  search(s: string, found: (f: RawFinding) => void): void
}

/** One plaintext of the vault found in a checked value: where, and how it was written. Never the plaintext. */
export interface LeakFinding {
  /** The token whose plaintext was found. */
  tokenId: string
  /** Whether that token is a canary made by `leaks.canary()`. */
  canary: boolean
  /** How it was written: `plain`, `json`, `base64`, `hex`, `url`, `digits` (a number, grouped or not), … */
  encoding: LeakEncoding
  /** Where in the checked value: `$` for the value itself, `$.rows[2].note`, `$[4]`, `$.headers[authorization]`. */
  path: string
  /** Offset of the match, in UTF-16 code units, in the string at `path` (bytes: in their UTF-8 decoding). */
  offset: number
}

/** The error a leak check fails with: the findings, by token id, path and encoding; never a plaintext. */
export class LeakError extends Error {
  override readonly name = 'LeakError'
  constructor(readonly findings: readonly LeakFinding[]) {
    super(describeFindings(findings))
  }
}

/** One line per finding (at most 20, then how many more). */
export function describeFindings(findings: readonly LeakFinding[]): string {
  const lines = findings
    .slice(0, 20)
    .map(
      (f) =>
        `  token ${f.tokenId}${f.canary ? ' (canary)' : ''} as ${f.encoding} at ${f.path} offset ${f.offset}`,
    )
  if (findings.length > 20) lines.push(`  … and ${findings.length - 20} more`)
  const tokens = new Set(findings.map((f) => f.tokenId)).size
  return `plaintext of ${tokens} vault token${tokens === 1 ? '' : 's'} found in the checked value:\n${lines.join('\n')}`
}

const decoder = new TextDecoder('utf-8', { fatal: false })
const MAX_DEPTH = 100

const keyPath = (path: string, key: string) =>
  /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`

/**
 * Every plaintext of `index` found in `value`: strings, numbers, bytes (`Uint8Array`, `Buffer`,
 * `ArrayBuffer`, decoded as UTF-8), arrays, objects (keys too), `Map`, `Set`, `Headers`,
 * `URLSearchParams` and errors (message and stack), however nested. Cycles are walked once.
 */
export function findLeaks(index: Searchable, value: unknown): LeakFinding[] {
  const findings: LeakFinding[] = []
  const seen = new Set<string>()
  const seenObjects = new Set<object>()
  const scan = (text: string, path: string) =>
    index.search(text, (f: RawFinding) => {
      const key = `${f.tokenId}\u0000${path}\u0000${f.offset}`
      if (seen.has(key)) return
      seen.add(key)
      findings.push({ tokenId: f.tokenId, canary: f.canary, encoding: f.encoding, path, offset: f.offset })
    })
  /** The text a leaf stands for (strings, numbers, bytes), or undefined for anything to walk into. */
  const leaf = (v: unknown): string | undefined => {
    if (typeof v === 'string') return v
    if (typeof v === 'number' || typeof v === 'bigint') return String(v)
    if (v instanceof ArrayBuffer) return decoder.decode(new Uint8Array(v))
    if (ArrayBuffer.isView(v))
      return decoder.decode(new Uint8Array(v.buffer as ArrayBuffer, v.byteOffset, v.byteLength))
    return undefined
  }
  const walk = (v: unknown, path: string, depth: number): void => {
    const text = leaf(v)
    if (text !== undefined) {
      scan(text, path)
      return
    }
    if (v === null || typeof v !== 'object' || depth > MAX_DEPTH || seenObjects.has(v)) return
    seenObjects.add(v)
    if (v instanceof Error) {
      scan(v.message, `${path}.message`)
      if (v.stack) scan(v.stack, `${path}.stack`)
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) walk(v[i], `${path}[${i}]`, depth + 1)
      return
    }
    if (v instanceof Set) {
      let i = 0
      for (const item of v) walk(item, `${path}[${i++}]`, depth + 1)
      return
    }
    const pairs =
      v instanceof Map || isEntries(v) ? [...(v as Map<unknown, unknown>).entries()] : Object.entries(v)
    pairs.forEach(([key, item], i) => {
      // A key that holds a plaintext is named by its place: a path never quotes a plaintext.
      const before = findings.length
      walk(key, `${path}<key #${i}>`, depth + 1)
      const named =
        findings.length === before && typeof key === 'string' ? keyPath(path, key) : `${path}[#${i}]`
      walk(item, named, depth + 1)
    })
  }
  walk(value, '$', 0)
  return findings
}

/** `Headers`, `URLSearchParams`, `FormData`: iterable key/value pairs with `entries()`. */
function isEntries(v: object): boolean {
  return (
    (typeof Headers !== 'undefined' && v instanceof Headers) ||
    (typeof URLSearchParams !== 'undefined' && v instanceof URLSearchParams) ||
    (typeof FormData !== 'undefined' && v instanceof FormData)
  )
}

/** A fetch `Response` or `Request` (read by `checkAsync`): its status line, headers and body. */
export function isMessage(value: unknown): value is Response | Request {
  return (
    (typeof Response !== 'undefined' && value instanceof Response) ||
    (typeof Request !== 'undefined' && value instanceof Request)
  )
}

/** A `Response` or `Request` as a plain value to check: url, headers and body text (read from a clone). */
export async function messageValue(message: Response | Request): Promise<unknown> {
  const body = await message.clone().text()
  return { url: message.url, headers: message.headers, body }
}
