import { DEFAULT_STORE } from './stores.js'

/** One option of `tokenvault serve`: its flag, the environment variable that sets it, its default. */
export interface CliOption {
  flag: string
  /** The environment variable read when the flag is absent (flags win). */
  env: string
  /** Shown in `--help`; undefined: none. */
  default?: string
  value: string
  description: string
  multiple?: boolean
  /** A switch: `--flag` alone, or the variable set to `1` or `true`. */
  boolean?: boolean
}

/** The per-tenant bounds `serve` passes to `createService`: flag, option, default, what it bounds. */
export const BOUND_FLAGS = [
  // No effect (see NO_EFFECT_BOUNDS): still accepted so that existing command lines keep starting.
  ['max-async-reacts-per-tenant', 'maxAsyncReactsPerTenant', '', ''],
  ['max-async-reacts', 'maxAsyncReacts', '', ''],
  [
    'max-idempotency-records-per-tenant',
    'maxIdempotencyRecordsPerTenant',
    '10000',
    'idempotency records one tenant may hold',
  ],
  [
    'max-unauthorized-sessions-per-tenant',
    'maxUnauthorizedSessionsPerTenant',
    '1000',
    'sessions not yet authorized one tenant may have',
  ],
  [
    'max-staged-chars-per-tenant',
    'maxStagedCharsPerTenant',
    '67108864',
    "characters of token JSON one tenant's open transactions may hold staged",
  ],
  ['journal-size-per-tenant', 'journalSizePerTenant', '500', 'journal entries kept of one tenant'],
  ['journal-size', 'journalSize', '1000', 'journal entries kept in all'],
  // Admission on the request path (`createHttpHandler`), see HTTP_BOUNDS.
  ['max-in-flight-per-tenant', 'maxInFlightPerTenant', '32', 'requests one tenant may have in flight'],
  [
    'max-in-flight-per-tenant-contended',
    'maxInFlightPerTenantContended',
    '2',
    'requests one tenant may have in flight, and begin in one turn of the event loop, while another tenant is active',
  ],
  [
    'max-in-flight-bytes-per-tenant',
    'maxInFlightBytesPerTenant',
    '2097152',
    'request body bytes one tenant may have in flight',
  ],
  [
    'max-in-flight-bytes-per-tenant-contended',
    'maxInFlightBytesPerTenantContended',
    '262144',
    'request body bytes one tenant may have in flight while another tenant is active (one request always passes)',
  ],
  ['max-queued-per-tenant', 'maxQueuedPerTenant', '128', 'requests of one tenant waiting for their turn'],
  ['max-in-flight', 'maxInFlight', '256', 'requests in flight in all'],
  ['max-in-flight-bytes', 'maxInFlightBytes', '67108864', 'request body bytes in flight in all'],
  ['max-queued', 'maxQueued', '1024', 'requests waiting for their turn in all'],
  // The listener's own (`drainingServer`), see SERVER_BOUNDS.
  ['max-connections', 'maxConnections', '4096', 'connections open at once; past it a new one is closed'],
] as const

/** The bounds of `BOUND_FLAGS` that `serve` passes to `createHttpHandler` rather than `createService`. */
export const HTTP_BOUNDS: ReadonlySet<string> = new Set([
  'maxInFlightPerTenant',
  'maxInFlightPerTenantContended',
  'maxInFlightBytesPerTenant',
  'maxInFlightBytesPerTenantContended',
  'maxQueuedPerTenant',
  'maxInFlight',
  'maxInFlightBytes',
  'maxQueued',
])

/**
 * The flags of `BOUND_FLAGS` that bound nothing any more (asynchronous reacts are on the outbox,
 * bounded by `maxPendingDeliveriesPerTenant`): still accepted, and still a whole number >= 1 when
 * given, for compatibility. `--help` shows no default for them.
 */
export const NO_EFFECT_BOUNDS: ReadonlySet<string> = new Set(['maxAsyncReactsPerTenant', 'maxAsyncReacts'])

/** The bounds of `BOUND_FLAGS` that are the listener's (`ConnectionLimits` of bin/connections.ts). */
export const SERVER_BOUNDS: ReadonlySet<string> = new Set(['maxConnections'])

/** A `createService` option `serve` takes from `BOUND_FLAGS`. */
export type BoundOption = (typeof BOUND_FLAGS)[number][1]

/** Every option of `tokenvault serve`: parsing, environment and `--help` all come from this table. */
export const CLI_OPTIONS: readonly CliOption[] = [
  {
    flag: 'port',
    env: 'PORT',
    default: '3000',
    value: 'n',
    description: 'port to listen on; 0 picks a free one',
  },
  { flag: 'host', env: 'HOST', default: '127.0.0.1', value: 'host', description: 'address to listen on' },
  {
    flag: 'store',
    env: 'TOKENVAULT_STORE',
    default: DEFAULT_STORE,
    value: 'store',
    description: 'memory | file:PATH | postgres://...',
  },
  {
    flag: 'header-prefix',
    env: 'TOKENVAULT_HEADER_PREFIX',
    value: 'p',
    description:
      'accept only this prefix of the API key, transaction and idempotency headers (SVC or BT); by default both SVC- and BT- (the Basis Theory SDKs) are accepted',
  },
  {
    flag: 'cors-origin',
    env: 'TOKENVAULT_CORS_ORIGINS',
    value: 'origin',
    description: 'let browser apps on this origin call the API; repeatable (env: comma-separated); * for any',
    multiple: true,
  },
  {
    flag: 'egress',
    env: 'TOKENVAULT_EGRESS',
    value: 'origin',
    description:
      'let the vault send to this origin: the proxy, formula fetch, async react callbacks (https://api.example.com); repeatable (env: comma-separated); off by default',
    multiple: true,
  },
  {
    flag: 'reactor-egress',
    env: 'TOKENVAULT_REACTOR_EGRESS',
    value: 'origin',
    description:
      'let formula code fetch, and async reacts call back, this origin (https://api.example.com); repeatable (env: comma-separated); off by default',
    multiple: true,
  },
  {
    flag: 'master-key-file',
    env: 'TOKENVAULT_MASTER_KEY_FILE',
    value: 'path',
    description:
      'file holding the master key (32 bytes, base64); TOKENVAULT_MASTER_KEY (base64) gives the key itself; default for a file or postgres store: ./.tokenvault.key, created 0600',
  },
  {
    flag: 'webhook-signing-key-file',
    env: 'TOKENVAULT_WEBHOOK_SIGNING_KEY_FILE',
    value: 'path',
    description:
      'file holding the RSA private key (PEM) webhook deliveries are signed with; default for a file or postgres store: ./.tokenvault-webhook-signing.pem, created 0600 (memory store: a key made at start; test mode: the published test key)',
  },
  {
    flag: 'new-master-key-file',
    env: 'TOKENVAULT_NEW_MASTER_KEY_FILE',
    value: 'path',
    description:
      'keys rotate-master: the new master key (used if the file exists, else a new key is written there, 0600); default: the old key file + .new, moved into its place when done (the old key kept as .old)',
  },
  {
    flag: 'retire-old-key',
    env: 'TOKENVAULT_RETIRE_OLD_KEY',
    value: '',
    description:
      'keys rotate-master: once the store is under the new master key, destroy the old key file (overwritten, removed): backups taken before no longer open',
    boolean: true,
  },
  {
    flag: 'batch-size',
    env: 'TOKENVAULT_BATCH_SIZE',
    value: 'n',
    description: 'keys reencrypt: tokens re-sealed per guarded write (1 to 10000; default 500)',
  },
  {
    flag: 'management-key',
    env: 'TOKENVAULT_MANAGEMENT_KEY',
    value: 'key',
    description:
      'on an empty store, create the management application with this key (key_ + 24 or more of A-Z a-z 0-9 _ -)',
  },
  {
    flag: 'test-mode',
    env: 'TOKENVAULT_TEST_MODE',
    value: '',
    description:
      'for test suites: a manual clock starting now, and the control plane under /_test/ (clock, reset, snapshot, restore, fixture, journal) behind --admin-token',
    boolean: true,
  },
  {
    flag: 'test-destination',
    env: 'TOKENVAULT_TEST_DESTINATION',
    value: 'origin=echo',
    description:
      'test mode: answer this origin in the process, echoing each request back as JSON, and keep what it received (GET /_test/proxy); on the egress list; repeatable',
    multiple: true,
  },
  {
    flag: 'heavy-lane',
    env: 'TOKENVAULT_HEAVY_LANE',
    default: 'on',
    value: 'on|off',
    description:
      'file or PostgreSQL store, outside test mode: the API keys whose requests are slow are answered by a worker thread of their own (on), or every request on the main thread (off)',
  },
  {
    flag: 'test-clock',
    env: 'TOKENVAULT_TEST_CLOCK',
    default: 'manual',
    value: 'kind',
    description:
      'test mode: manual (stands still until POST /_test/clock moves it) | ticking (runs with real time, jumps when moved)',
  },
  {
    flag: 'admin-token',
    env: 'TOKENVAULT_ADMIN_TOKEN',
    value: 'token',
    description: 'bearer token of the /_test/ control plane (test mode; printed at start when generated)',
  },
  {
    flag: 'seed',
    // Not TOKENVAULT_SEED: that name once meant the test suites' fuzz seed too; one meaning per name.
    env: 'TOKENVAULT_SEED_FILE',
    value: 'file',
    description: 'a fixture (JSON) loaded at start on an empty store, in any mode',
  },
  {
    flag: 'tenant',
    env: 'TOKENVAULT_TENANT',
    value: 'id',
    description: "keys create: the tenant the new management key is for (default: the store's only tenant)",
  },
  ...BOUND_FLAGS.map(([flag, option, fallback, what]): CliOption => {
    const env = `TOKENVAULT_${flag.toUpperCase().replaceAll('-', '_')}`
    if (NO_EFFECT_BOUNDS.has(option))
      return {
        flag,
        env,
        value: 'n',
        description: 'formerly a bound on asynchronous reacts (no effect; kept for compatibility)',
      }
    return {
      flag,
      env,
      default: fallback,
      value: 'n',
      description: `${what} (a whole number >= 1; see docs/limits.md, "Bounds per tenant")`,
    }
  }),
  {
    flag: 'store-wait-ms',
    env: 'TOKENVAULT_STORE_WAIT_MS',
    default: '0',
    value: 'ms',
    description:
      'keep trying to open a store that is not reachable yet (a database starting after the vault) for this long, with back-off and a progress line; 0: fail at once',
  },
  {
    flag: 'shutdown-delay-ms',
    env: 'TOKENVAULT_SHUTDOWN_DELAY_MS',
    default: '0',
    value: 'ms',
    description:
      'on SIGTERM or SIGINT, keep serving this long with /readyz answering 503 and every answer closing its connection, before the listener stops (time for a load balancer to stop sending)',
  },
  {
    flag: 'shutdown-grace-ms',
    env: 'TOKENVAULT_SHUTDOWN_GRACE_MS',
    default: '5000',
    value: 'ms',
    description:
      'once the listener stopped, how long requests in flight get to be answered before their connections are closed',
  },
  {
    flag: 'log',
    env: 'TOKENVAULT_LOG',
    default: 'text',
    value: 'format',
    description: 'request and error log on stderr: text | json | none (never keys, nonces or token data)',
  },
]

/** The values of `CLI_OPTIONS` from flags, else the environment, else the default. */
export function resolveOptions(
  flags: Record<string, string | boolean | (string | boolean)[] | undefined>,
  env: NodeJS.ProcessEnv,
): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {}
  for (const option of CLI_OPTIONS) {
    const given = flags[option.flag]
    const fromEnv = env[option.env]
    if (option.boolean) {
      const on =
        given === true || given === 'true' || (given === undefined && (fromEnv === '1' || fromEnv === 'true'))
      out[option.flag] = on ? 'true' : undefined
    } else if (option.multiple) {
      const list =
        Array.isArray(given) && given.length
          ? given.map(String)
          : fromEnv
            ? fromEnv.split(',').map((s) => s.trim())
            : []
      out[option.flag] = list.filter((s) => s !== '')
    } else {
      out[option.flag] =
        typeof given === 'string' ? given : fromEnv !== undefined && fromEnv !== '' ? fromEnv : option.default
    }
  }
  return out
}

/** The `parseArgs` option table. */
export function parseArgsOptions() {
  const table: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {}
  for (const option of CLI_OPTIONS)
    table[option.flag] = option.boolean
      ? { type: 'boolean' }
      : { type: 'string', ...(option.multiple ? { multiple: true } : {}) }
  table['help'] = { type: 'boolean', short: 'h' }
  table['version'] = { type: 'boolean', short: 'v' }
  return table
}

/** `text` in lines of at most `width` columns (a longer word stays whole). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  if (line !== '') lines.push(line)
  return lines
}

/** The column where option descriptions start in `--help`. */
const DESCRIPTION_COLUMN = 28

/** One option's `--help` entry: the flag, then its description wrapped to `width` columns. */
function optionHelp(head: string, text: string, width: number): string[] {
  const body = wrap(text, Math.max(30, width - DESCRIPTION_COLUMN))
  const indent = ' '.repeat(DESCRIPTION_COLUMN)
  if (`${head}  `.length > DESCRIPTION_COLUMN) return [head, ...body.map((l) => indent + l)]
  return [`${head}  `.padEnd(DESCRIPTION_COLUMN) + body[0], ...body.slice(1).map((l) => indent + l)]
}

/** The closest flag to an unknown `given` (at most 2 edits away, or one it begins), for "did you mean". */
export function closestFlag(given: string): string | undefined {
  const flags = [...CLI_OPTIONS.map((o) => o.flag), 'help', 'version']
  let best: string | undefined
  let bestDistance = 3
  for (const flag of flags) {
    const d = given.length >= 3 && flag.startsWith(given) ? 1 : editDistance(given, flag)
    if (d < bestDistance) {
      best = flag
      bestDistance = d
    }
  }
  return best
}

/** The Levenshtein distance of two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution)
    }
    previous = current
  }
  return previous[b.length]!
}

/** `--help`: every option with its environment variable and default, wrapped to `width` columns. */
export function usage(width = 80): string {
  const lines = CLI_OPTIONS.flatMap((o) => {
    const head = o.boolean ? `  --${o.flag}` : `  --${o.flag} <${o.value}>`
    const tail = [`env ${o.env}`, o.default !== undefined ? `default ${o.default}` : '']
      .filter(Boolean)
      .join('; ')
    return optionHelp(head, `${o.description} (${tail})`, width)
  })
  const synopsis = [
    'Usage: tokenvault serve [options]',
    '       tokenvault keys create --store <store> [--tenant <id>] [--management-key <key>]',
    '       tokenvault keys rotate-master --store <store> [--master-key-file <old>] [--new-master-key-file <new>] [--retire-old-key]',
    '       tokenvault keys rotate | reencrypt --store <store> [--tenant <id>] [--batch-size <n>]',
    '       tokenvault keys destroy --store <store> --tenant <id>',
    '       tokenvault logs verify --store <store> [--tenant <id>]',
    '       tokenvault webhooks public-key [--webhook-signing-key-file <file>]',
    '       tokenvault --version',
  ].flatMap((line) => {
    // A synopsis longer than the terminal goes on under its command, indented.
    const [lead = '', ...rest] = wrap(line, width - 11)
    return [line.startsWith(' ') ? `       ${lead}` : lead, ...rest.map((l) => `           ${l}`)]
  })
  return [
    ...synopsis,
    '',
    ...wrap(
      [
        'serve: serves the tokenvault HTTP API. keys create: mints a new management key for an existing store',
        "(prints it once). keys rotate-master: re-wraps a stopped store's data keys under a new master key. keys rotate: a new data-key",
        'version for a tenant (or all); keys reencrypt: re-seals older versions and retires them (progress on stderr); keys destroy:',
        "crypto-shreds a tenant's keys. logs verify: checks each tenant's audit log chain. webhooks public-key: prints the public",
        'key receivers verify deliveries with. Every option can also come from its environment variable; flags win.',
      ].join(' '),
      width,
    ),
    '',
    'Options:',
    ...lines,
    `${'  -v, --version'.padEnd(DESCRIPTION_COLUMN)}print the version`,
    `${'  -h, --help'.padEnd(DESCRIPTION_COLUMN)}show this help`,
    '',
  ].join('\n')
}
