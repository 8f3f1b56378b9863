#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { loadMasterKey } from './master-key.js'
import { serve } from './serve.js'
import { DEFAULT_STORE, isStoreSpec } from './stores.js'

const USAGE = `Usage: tokenvault serve [options]

Serves the tokenvault HTTP API.

Options:
  --port <n>             port to listen on; 0 picks a free one (default 3000)
  --host <host>          address to listen on (default 127.0.0.1)
  --store <store>        memory | file:PATH | postgres://... (default ${DEFAULT_STORE})
  --header-prefix <p>    prefix of the API key and transaction headers (default SVC)
  --cors-origin <o>      let browser apps on this origin call the API (repeatable; * for any)
  --master-key-file <f>  file holding the master key (32 bytes, base64); env TOKENVAULT_MASTER_KEY
                         (base64) instead; default for a file or postgres store: ./.tokenvault.key,
                         created 0600 on first start
  -h, --help             show this help
`

function fail(message: string): never {
  process.stderr.write(`tokenvault: ${message}\n\n${USAGE}`)
  process.exit(2)
}

function parsePort(value: string): number {
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65_535)
    fail(`--port must be a whole number from 0 to 65535, not ${value}`)
  return port
}

async function main(argv: string[]) {
  let parsed: ReturnType<typeof parse>
  const parse = (args: string[]) =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        port: { type: 'string', default: '3000' },
        host: { type: 'string', default: '127.0.0.1' },
        store: { type: 'string', default: DEFAULT_STORE },
        'header-prefix': { type: 'string', default: 'SVC' },
        'master-key-file': { type: 'string' },
        'cors-origin': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h', default: false },
      },
    })
  try {
    parsed = parse(argv)
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error))
  }
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  if (positionals.length !== 1 || positionals[0] !== 'serve') fail('the only command is serve')
  if (!isStoreSpec(values.store))
    fail(`--store must be memory, file:PATH or a postgres:// URL, not ${values.store}`)
  if (!/^[A-Za-z0-9-]+$/.test(values['header-prefix']))
    fail('--header-prefix may hold only letters, digits and -')

  let masterKey: Uint8Array | undefined
  if (values.store !== 'memory' || process.env['TOKENVAULT_MASTER_KEY'] || values['master-key-file']) {
    let loaded: ReturnType<typeof loadMasterKey>
    try {
      loaded = loadMasterKey({
        env: process.env['TOKENVAULT_MASTER_KEY'],
        file: values['master-key-file'],
        defaultFile: '.tokenvault.key',
      })
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error))
    }
    masterKey = loaded.key
    if (loaded.note) process.stderr.write(`tokenvault: ${loaded.note}\n`)
  }
  const server = await serve({
    port: parsePort(values.port),
    host: values.host,
    store: values.store,
    headerPrefix: values['header-prefix'],
    ...(masterKey ? { masterKey } : {}),
    ...(values['cors-origin']?.length ? { corsOrigins: values['cors-origin'] } : {}),
  })
  let stopping = false
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`tokenvault: ${signal} again, exiting now\n`)
      process.exit(1)
    }
    stopping = true
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tokenvault: shutdown failed: ${String(error)}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`tokenvault: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
