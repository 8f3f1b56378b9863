/** Checks of the command line's values and the words of its start failures. */

/** Whether `value` is `*` or a plain origin (`https://app.example.com`, `http://localhost:5173`). */
export function isCorsOrigin(value: string): boolean {
  if (value === '*') return true
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  return url.origin === value.replace(/\/$/, '')
}

/** Optional packages a store loads on demand, and what installs them. */
const OPTIONAL_PACKAGES: Record<string, string> = { pg: 'the postgres store needs the pg package: npm i pg' }

/**
 * The line printed when the server fails to start: the error's message, or for an optional
 * package that is not installed (`pg`), what to install.
 */
export function explainStartError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
    const name = /Cannot find (?:package|module) '([^']+)'/.exec(message)?.[1]
    const hint = name === undefined ? undefined : OPTIONAL_PACKAGES[name]
    if (hint) return hint
  }
  return message
}
