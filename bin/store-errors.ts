/** The words of a store that fails to open: which store, what happened, what to check. */

/** A `--store` value in words, without its password: `PostgreSQL at HOST:PORT, database DB, user U`. */
export function describeStore(spec: string): string {
  if (spec === 'memory') return 'the memory store'
  if (spec.startsWith('file:')) return `the file store in ${spec.slice('file:'.length)}`
  let url: URL
  try {
    url = new URL(spec)
  } catch {
    return 'the PostgreSQL store'
  }
  const host = url.searchParams.get('host') ?? (url.hostname || 'localhost')
  const port = url.searchParams.get('port') ?? (url.port || '5432')
  const database = decodeURIComponent(url.pathname.slice(1)) || '(the user name)'
  const user = url.username ? `, user ${decodeURIComponent(url.username)}` : ''
  return `the PostgreSQL store at ${host}:${port} (database ${database}${user})`
}

/**
 * Why a `postgres://` URL can't be right, or undefined. A URL that does not parse would otherwise
 * reach the driver, which may read another host or port than meant; the message never shows the
 * password.
 */
export function postgresUrlProblem(spec: string): string | undefined {
  let url: URL
  try {
    url = new URL(spec)
  } catch {
    const shown = spec.replace(/\/\/[^@/]*@/, '//***@')
    return `--store (TOKENVAULT_STORE): ${shown} is not a valid URL: the form is postgres://USER:PASSWORD@HOST:PORT/DATABASE, the port a number, and @ : / ? # in the user or password percent-encoded (%40 %3A %2F %3F %23)`
  }
  if (url.hash !== '')
    return '--store (TOKENVAULT_STORE): the URL has a # (a fragment), so what follows it is ignored: percent-encode # as %23 in a password'
  if (url.pathname.slice(1).includes('/'))
    return `--store (TOKENVAULT_STORE): the database name may not contain / (the URL's path is ${url.pathname})`
  return undefined
}

/** Driver failures that may pass once the database is up: worth another try within `--store-wait-ms`. */
const TRANSIENT = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '57P03', // the database system is starting up
  '53300', // too many connections
])

/** Each failure: a short reason (the progress line) and what to check (the final error). */
const ADVICE: Record<string, [reason: string, check: string]> = {
  ECONNREFUSED: ['connection refused', 'is PostgreSQL running, and listening on that host and port?'],
  ECONNRESET: ['connection reset', 'is that port a PostgreSQL server (not another service)?'],
  ENOTFOUND: ['host not found', 'is the host name right (and, with Docker Compose, the service started)?'],
  EAI_AGAIN: ['host name lookup failed', 'is the host name right, and DNS reachable?'],
  ETIMEDOUT: ['no answer in time', 'does a firewall drop the connection, or is the host down?'],
  EHOSTUNREACH: ['host unreachable', 'is the host up and routed?'],
  ENETUNREACH: ['network unreachable', 'is the network up?'],
  EPIPE: ['connection closed', 'is that port a PostgreSQL server?'],
  '57P03': ['the database is starting up', 'wait for it: --store-wait-ms'],
  '53300': ['too many connections', "raise PostgreSQL's max_connections or lower other clients' pools"],
  '28P01': ['password authentication failed', 'check the user and password in the URL'],
  '28000': ['the user may not connect', 'check the user, and pg_hba.conf for this client address'],
  '3D000': ['the database does not exist', 'create it (createdb NAME) or fix the path of the URL'],
  '42501': ['permission denied', 'the user needs to create tables in the database (or run as its owner)'],
  EACCES: ['permission denied', "check the directory's owner and mode (the server's user must write it)"],
  EROFS: ['read-only file system', 'put the store on a writable volume'],
  ENOSPC: ['the disk is full', 'free space on its disk'],
}

/** The code of a driver or file-system error, or of the error it wraps. */
function codeOf(error: unknown): string | undefined {
  for (
    let e = error as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined, i = 0;
    e && i < 4;
    i++
  ) {
    if (typeof e.code === 'string') return e.code
    // An AggregateError (a host with both an IPv4 and an IPv6 address) holds one error per address.
    const first = Array.isArray(e.errors) ? e.errors[0] : undefined
    e = (first ?? e.cause) as typeof e
  }
  return /timeout/i.test(String((error as Error | undefined)?.message)) ? 'ETIMEDOUT' : undefined
}

/** A store's failure to open, in words: `retry` when waiting may help. */
export function storeFailure(
  error: unknown,
  spec: string,
): { reason: string; message: string; retry: boolean } {
  const code = codeOf(error)
  const where = describeStore(spec)
  const advice = code === undefined ? undefined : ADVICE[code]
  const raw = error instanceof Error ? error.message : String(error)
  const reason = advice?.[0] ?? raw
  const check = advice ? `: ${advice[1]}` : ''
  const retry = code !== undefined && TRANSIENT.has(code)
  const hint = retry && !spec.startsWith('file:') ? ' (or wait for it to start: --store-wait-ms)' : ''
  return {
    reason,
    message: `${where} could not be opened: ${reason}${code ? ` (${code})` : ''}${check}${hint}`,
    retry,
  }
}
