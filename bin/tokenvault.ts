#!/usr/bin/env node
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { parseEgressOrigins } from '../src/reactors/index.js'
import { explainStartError, isCorsOrigin } from './checks.js'
import {
  createManagementKey,
  destroyTenantKeys,
  progressLine,
  reencryptStore,
  rotateDataKeys,
  rotateMasterKeyFile,
  storeStopped,
} from './keys.js'
import { verificationLine, verifyStoreLogs } from './logs.js'
import { isPublishedKey, loadMasterKey } from './master-key.js'
import {
  BOUND_FLAGS,
  type BoundOption,
  closestFlag,
  NO_EFFECT_BOUNDS,
  parseArgsOptions,
  resolveOptions,
  usage,
} from './options.js'
import { serve } from './serve.js'
import { stopOnSignals } from './signals.js'
import { loadSigningKey, publicKeyOf } from './signing-key.js'
import { postgresUrlProblem } from './store-errors.js'
import { isStoreSpec } from './stores.js'

/** This package's version, from its package.json (one level up from `bin/` and from `dist/bin/`). */
function version(): string {
  for (const up of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as {
        name?: string
        version?: string
      }
      if (pkg.name === 'tokenvault' && pkg.version) return pkg.version
    } catch {
      // Not there: try the next.
    }
  }
  return 'unknown'
}

/** `--help` wrapped to the terminal (80 columns when stdout is not one). */
const USAGE = usage(process.stdout.columns || Number(process.env['COLUMNS']) || 80)

function fail(message: string): never {
  process.stderr.write(`tokenvault: ${message}\n\n${USAGE}`)
  process.exit(2)
}

function parsePort(value: string): number {
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65_535)
    fail(`--port (PORT) must be a whole number from 0 to 65535, not ${value}`)
  return port
}

const LOG_FORMATS = ['text', 'json', 'none'] as const
const MANAGEMENT_KEY = /^key_[A-Za-z0-9_-]{24,}$/
const COMMANDS = [
  'serve',
  'keys create',
  'keys rotate-master',
  'keys rotate',
  'keys reencrypt',
  'keys destroy',
  'logs verify',
  'webhooks public-key',
]

async function main(argv: string[]) {
  let flags: ReturnType<typeof parseArgs>
  try {
    flags = parseArgs({ args: argv, allowPositionals: true, options: parseArgsOptions() })
  } catch (error) {
    fail(unknownOptionMessage(error))
  }
  if (flags.values['help']) {
    process.stdout.write(USAGE)
    return
  }
  if (flags.values['version']) {
    process.stdout.write(`tokenvault ${version()}\n`)
    return
  }
  const resolved = resolveOptions(flags.values, process.env)
  const one = (name: string): string => String(resolved[name] ?? '')
  const values = {
    port: one('port'),
    host: one('host'),
    store: one('store'),
    'header-prefix': resolved['header-prefix'] as string | undefined,
    log: one('log'),
    'master-key-file': resolved['master-key-file'] as string | undefined,
    'webhook-signing-key-file': resolved['webhook-signing-key-file'] as string | undefined,
    'batch-size': resolved['batch-size'] as string | undefined,
    'retire-old-key': resolved['retire-old-key'] === 'true',
    'new-master-key-file': resolved['new-master-key-file'] as string | undefined,
    'management-key': resolved['management-key'] as string | undefined,
    'cors-origin': (resolved['cors-origin'] as string[] | undefined) ?? [],
    // --egress is the option's name; --reactor-egress stays as its alias (both lists are allowed).
    'reactor-egress': [
      ...((resolved.egress as string[] | undefined) ?? []),
      ...((resolved['reactor-egress'] as string[] | undefined) ?? []),
    ],
    'test-mode': resolved['test-mode'] === 'true',
    'admin-token': resolved['admin-token'] as string | undefined,
    'test-destination': (resolved['test-destination'] as string[] | undefined) ?? [],
    'test-clock': one('test-clock'),
    'heavy-lane': one('heavy-lane'),
    seed: resolved['seed'] as string | undefined,
    tenant: resolved['tenant'] as string | undefined,
  }
  const bounds: Partial<Record<BoundOption, number>> = {}
  for (const [flag, option] of BOUND_FLAGS) {
    const given = one(flag)
    if (given === '' && NO_EFFECT_BOUNDS.has(option)) continue
    if (!/^[1-9][0-9]{0,8}$/.test(given))
      fail(
        `--${flag} (TOKENVAULT_${flag.toUpperCase().replaceAll('-', '_')}) must be a whole number from 1 to 999999999, not ${given}`,
      )
    bounds[option] = Number(given)
  }
  const command = flags.positionals.join(' ')
  if (!COMMANDS.includes(command))
    fail(
      'the commands are serve, keys create, keys rotate-master, keys rotate, keys reencrypt, keys destroy, logs verify and webhooks public-key',
    )
  if (!isStoreSpec(values.store))
    fail(`--store (TOKENVAULT_STORE) must be memory, file:PATH or a postgres:// URL, not ${values.store}`)
  const urlProblem = values.store.startsWith('postgres') ? postgresUrlProblem(values.store) : undefined
  if (urlProblem) fail(urlProblem)
  const headerPrefix = values['header-prefix']
  if (headerPrefix !== undefined && !/^[A-Za-z0-9-]{1,32}$/.test(headerPrefix))
    fail('--header-prefix (TOKENVAULT_HEADER_PREFIX) may hold only letters, digits and -')
  const logFormat = values['log'] as (typeof LOG_FORMATS)[number]
  if (!LOG_FORMATS.includes(logFormat))
    fail(`--log (TOKENVAULT_LOG) must be text, json or none, not ${values['log']}`)
  try {
    parseEgressOrigins(values['reactor-egress'])
  } catch (error) {
    fail(
      `--reactor-egress (TOKENVAULT_REACTOR_EGRESS): ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  // Every value is checked before anything is written (the master key file included).
  const port = command === 'serve' ? parsePort(values.port) : 0
  const millis = (flag: string) => {
    const given = one(flag)
    if (!/^(0|[1-9][0-9]{0,8})$/.test(given))
      fail(
        `--${flag} (TOKENVAULT_${flag.toUpperCase().replaceAll('-', '_')}) must be a whole number of milliseconds from 0 to 999999999, not ${given}`,
      )
    return Number(given)
  }
  for (const flag of ['store-wait-ms', 'shutdown-delay-ms', 'shutdown-grace-ms']) millis(flag)
  for (const origin of values['cors-origin']) {
    if (!isCorsOrigin(origin))
      fail(
        `--cors-origin (TOKENVAULT_CORS_ORIGINS) must be * or an origin like https://app.example.com (scheme, host, optional port; no path), not ${origin}`,
      )
  }
  const managementKey = values['management-key']
  if (managementKey !== undefined && !MANAGEMENT_KEY.test(managementKey)) {
    fail(
      '--management-key (TOKENVAULT_MANAGEMENT_KEY) must be key_ followed by 24 or more of A-Z a-z 0-9 _ -',
    )
  }

  const adminToken = values['admin-token']
  if (adminToken !== undefined && !/^[A-Za-z0-9_.~-]{16,200}$/.test(adminToken)) {
    fail('--admin-token (TOKENVAULT_ADMIN_TOKEN) must be 16 to 200 of A-Z a-z 0-9 _ . ~ -')
  }
  const heavyLane = values['heavy-lane']
  if (heavyLane !== 'on' && heavyLane !== 'off')
    fail(`--heavy-lane (TOKENVAULT_HEAVY_LANE) must be on or off, not ${heavyLane}`)
  const testClock = values['test-clock']
  if (testClock !== 'manual' && testClock !== 'ticking')
    fail(`--test-clock (TOKENVAULT_TEST_CLOCK) must be manual or ticking, not ${testClock}`)
  if (adminToken !== undefined && !values['test-mode'])
    fail('--admin-token needs --test-mode (TOKENVAULT_TEST_MODE=1)')
  const testDestinations = values['test-destination'].map((given) => {
    const origin = /^(.+)=echo$/.exec(given)?.[1]
    if (origin === undefined || !/^https?:\/\/[^/]+$/.test(origin) || !URL.canParse(origin))
      fail(`--test-destination must be ORIGIN=echo (https://api.example.com=echo), not ${given}`)
    return new URL(origin!).origin
  })
  if (testDestinations.length && !values['test-mode'])
    fail('--test-destination needs --test-mode (TOKENVAULT_TEST_MODE=1)')
  let seed: unknown
  if (values.seed !== undefined) {
    try {
      seed = JSON.parse(readFileSync(values.seed, 'utf8'))
    } catch (error) {
      fail(
        `--seed (TOKENVAULT_SEED_FILE): ${values.seed} is not a readable JSON file: ${error instanceof Error ? error.message : String(error)}`,
      )
    }
  }

  if (command === 'webhooks public-key') {
    const file = values['webhook-signing-key-file']
    const loaded = attempt(() => loadSigningKey({ file, create: false }))
    process.stdout.write(publicKeyOf(loaded.pem))
    return
  }
  if (command === 'keys rotate-master') {
    await rotateMaster(values.store, values['master-key-file'], values['new-master-key-file'])
    if (values['retire-old-key']) retireOldMasterKey(values['master-key-file'], values['new-master-key-file'])
    return
  }
  const masterKey = masterKeyOf(values.store, values['master-key-file'], logFormat, command === 'serve')
  if (command === 'keys rotate' || command === 'keys reencrypt' || command === 'keys destroy') {
    const key = typeof masterKey === 'function' ? masterKey() : masterKey
    await dataKeyCommand(command, {
      store: values.store,
      ...(key ? { masterKey: key } : {}),
      ...(values.tenant ? { tenant: values.tenant } : {}),
      ...(values['batch-size'] ? { batchSize: batchSizeOf(values['batch-size']) } : {}),
    })
    return
  }
  if (command === 'logs verify') {
    const key = typeof masterKey === 'function' ? masterKey() : masterKey
    const results = await verifyStoreLogs({
      store: values.store,
      ...(key ? { masterKey: key } : {}),
      ...(values.tenant ? { tenant: values.tenant } : {}),
    })
    for (const r of results) process.stdout.write(`${verificationLine(r)}\n`)
    // Exit status 1 when a log is broken, so scripts and monitors can act on it.
    if (results.some((r) => !r.result.ok)) process.exitCode = 1
    return
  }
  if (command === 'keys create') {
    const key = typeof masterKey === 'function' ? masterKey() : masterKey
    const made = await createManagementKey({
      store: values.store,
      ...(key ? { masterKey: key } : {}),
      ...(values.tenant ? { tenant: values.tenant } : {}),
      ...(managementKey ? { key: managementKey } : {}),
    })
    process.stdout.write(`tenant: ${made.tenantId}\nmanagement key: ${made.key}\n`)
    return
  }
  const note = (line: string, level = 'info') => writeNote(logFormat, line, level)
  // Before anything starts: a signal during start-up stops it cleanly.
  const signals = stopOnSignals(note)
  let server: Awaited<ReturnType<typeof serve>>
  try {
    server = await serve({
      port,
      host: values.host,
      store: values.store,
      ...(headerPrefix ? { headerPrefix } : {}),
      ...(masterKey ? { masterKey } : {}),
      ...signingKeyOf(values.store, values['webhook-signing-key-file'], values['test-mode'], logFormat),
      ...(values['cors-origin']?.length ? { corsOrigins: values['cors-origin'] } : {}),
      ...(values['reactor-egress'].length ? { reactorEgress: values['reactor-egress'] } : {}),
      ...(managementKey ? { managementKey } : {}),
      ...(values['test-mode'] ? { testMode: true } : {}),
      ...(adminToken ? { adminToken } : {}),
      ...(testDestinations.length ? { testDestinations } : {}),
      testClock,
      ...(heavyLane === 'off' ? { heavyLane: false } : {}),
      ...(seed !== undefined ? { seed } : {}),
      bounds,
      logFormat,
      storeWaitMs: millis('store-wait-ms'),
      shutdownDelayMs: millis('shutdown-delay-ms'),
      shutdownGraceMs: millis('shutdown-grace-ms'),
      signal: signals.stopped,
    })
  } catch (error) {
    if (!signals.stopped.aborted) throw error
    note('stopped before listening')
    process.exit(0)
  }
  signals.serving(server)
}

/**
 * The master key of `serve` and `keys create`: for a file or PostgreSQL store (or when one is
 * given), from TOKENVAULT_MASTER_KEY, --master-key-file or ./.tokenvault.key. A key that exists is
 * read (and checked) now; a default file still to create is created only when called, after the
 * store opened (`later`), so that a store that fails to open leaves no key file behind.
 */
function masterKeyOf(
  store: string,
  file: string | undefined,
  logFormat: string,
  later: boolean,
): Uint8Array | (() => Uint8Array) | undefined {
  const env = process.env['TOKENVAULT_MASTER_KEY']
  if (store === 'memory' && !env && !file) return undefined
  const load = () => {
    const loaded = attempt(() => loadMasterKey({ env, file, defaultFile: '.tokenvault.key' }))
    if (isPublishedKey(loaded.key)) fail(publishedKeyMessage(store, loaded.file))
    if (loaded.note) writeNote(logFormat, loaded.note)
    return loaded.key
  }
  return later && !env && !file && !existsSync('.tokenvault.key') ? load : load()
}

/** Writes `line` on stderr as the log format has it (a JSON line, or text after `tokenvault: `). */
function writeNote(logFormat: string, line: string, level = 'info'): void {
  const text =
    logFormat === 'json'
      ? JSON.stringify({ time: new Date().toISOString(), level, msg: line })
      : `tokenvault: ${line}`
  process.stderr.write(`${text}\n`)
}

/** `work`'s answer; its error ends the CLI with the error's message. */
function attempt<T>(work: () => T): T {
  try {
    return work()
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error))
  }
}

/**
 * The webhook signing key of `serve`: from --webhook-signing-key-file when given (checked now); for a
 * file or PostgreSQL store outside test mode, from ./.tokenvault-webhook-signing.pem, made on first
 * start once the store opened (the key deliveries still pending after a restart are signed with, and
 * that every server on the store shares). None for a memory store: the service then makes a key for
 * itself (its deliveries end with it), and in test mode signs with the published test key.
 */
function signingKeyOf(
  store: string,
  file: string | undefined,
  testMode: boolean,
  logFormat: string,
): { webhookSigningKey?: string | (() => string) } {
  if (file) return { webhookSigningKey: attempt(() => loadSigningKey({ file, create: false, testMode })).pem }
  if (store === 'memory' || testMode) return {}
  const load = () => {
    const loaded = attempt(() => loadSigningKey({ create: true }))
    if (loaded.note) writeNote(logFormat, loaded.note)
    return loaded.pem
  }
  return { webhookSigningKey: load }
}

/** parseArgs's error, with "did you mean" for an unknown option close to a known one. */
function unknownOptionMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const unknown = /^Unknown option '--([^'=]+)'/.exec(message)?.[1]
  if (unknown === undefined) return message
  const near = closestFlag(unknown)
  return `unknown option --${unknown}${near ? `; did you mean --${near}?` : ''}`
}

/** Why the CLI refuses a published master key, and the command that rotates it away. */
function publishedKeyMessage(store: string, file: string | null): string {
  const where = file ?? 'TOKENVAULT_MASTER_KEY'
  const flag = file ? ` --master-key-file ${file}` : ''
  return (
    `the master key in ${where} is the one that was published with tokenvault's source: anyone can open a store sealed under it. ` +
    `Stop every server on the store and rotate it: tokenvault keys rotate-master --store ${store}${flag}`
  )
}

/** `tokenvault keys rotate-master`: the old key from where `serve` takes it (never created), the new one from a file. */
async function rotateMaster(store: string, oldFile: string | undefined, newFile: string | undefined) {
  if (store === 'memory') fail('keys rotate-master needs a file or PostgreSQL store (--store)')
  let old: ReturnType<typeof loadMasterKey>
  try {
    old = loadMasterKey({
      env: process.env['TOKENVAULT_MASTER_KEY'],
      file: oldFile,
      defaultFile: '.tokenvault.key',
      create: false,
    })
  } catch (error) {
    fail(`the current master key: ${error instanceof Error ? error.message : String(error)}`)
  }
  if (!newFile && !old.file)
    fail('--new-master-key-file is needed when the old key comes from TOKENVAULT_MASTER_KEY')
  const target = newFile ?? `${old.file}.new`
  if (!newFile && existsSync(`${old.file}.old`))
    fail(`${old.file}.old exists: move it away first (it may hold the key of older backups)`)
  const warn = (line: string) => process.stderr.write(`tokenvault: warning: ${line}\n`)
  const release = await storeStopped(store, warn).catch((error: unknown) =>
    fail(error instanceof Error ? error.message : String(error)),
  )
  const done = await rotateMasterKeyFile({ store, masterKey: old.key, newKeyFile: target }).finally(release)
  let where = target
  if (!newFile && old.file) {
    renameSync(old.file, `${old.file}.old`)
    renameSync(target, old.file)
    where = old.file
  }
  const kept =
    !newFile && old.file
      ? `; the old key is in ${old.file}.old: it opens only backups taken before now, destroy it once they are gone`
      : ''
  process.stdout.write(
    `rotated the master key of ${done.tenants} tenant(s) to key id ${done.keyId}, ${done.created ? 'created' : 'read'} in ${where}${kept}\n`,
  )
}

/** `--batch-size`: a whole number from 1 to 10000. */
function batchSizeOf(given: string): number {
  if (!/^[1-9][0-9]{0,4}$/.test(given) || Number(given) > 10_000)
    fail(`--batch-size (TOKENVAULT_BATCH_SIZE) must be a whole number from 1 to 10000, not ${given}`)
  return Number(given)
}

/** `keys rotate`, `keys reencrypt` (with its progress line on stderr) and `keys destroy`. */
async function dataKeyCommand(
  command: string,
  options: { store: string; masterKey?: Uint8Array; tenant?: string; batchSize?: number },
) {
  if (command === 'keys rotate') {
    for (const r of await rotateDataKeys(options))
      process.stdout.write(`tenant ${r.tenantId}: data key version ${r.version} is current\n`)
    return
  }
  if (command === 'keys destroy') {
    if (!options.tenant) fail("keys destroy needs --tenant: it destroys one tenant's keys")
    await destroyTenantKeys({ ...options, tenant: options.tenant })
    process.stdout.write(`tenant ${options.tenant}: data keys destroyed; its data can't be read any more\n`)
    return
  }
  const tty = process.stderr.isTTY === true
  const done = await reencryptStore({
    ...options,
    onProgress: (p, startedAt) =>
      process.stderr.write(`${tty ? '\r' : ''}${progressLine(p, startedAt)}${tty ? '' : '\n'}`),
  })
  if (tty) process.stderr.write('\n')
  for (const p of done)
    process.stdout.write(
      `tenant ${p.tenantId}: every record on data key version ${p.to}; versions held: ${p.versions.join(', ')}\n`,
    )
}

/**
 * `keys rotate-master --retire-old-key`: the old master key is destroyed once the store is under
 * the new one (its file overwritten, then removed), so a backup taken before no longer opens.
 */
function retireOldMasterKey(oldFile: string | undefined, newFile: string | undefined) {
  const resolved = oldFile ?? (process.env['TOKENVAULT_MASTER_KEY'] ? undefined : '.tokenvault.key')
  const file = resolved === undefined ? undefined : newFile ? resolved : `${resolved}.old`
  if (file === undefined || !existsSync(file)) {
    process.stdout.write(
      'the old master key came from TOKENVAULT_MASTER_KEY: remove it from the environment and every secret store to retire it\n',
    )
    return
  }
  writeFileSync(file, Buffer.alloc(64))
  rmSync(file)
  process.stdout.write(
    `retired the old master key (${file} overwritten and removed): backups taken before now no longer open\n`,
  )
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`tokenvault: ${explainStartError(error)}\n`)
  process.exit(1)
})
