import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import pg from 'pg'

const root = new URL('../../', import.meta.url)
const children: ChildProcess[] = []

/**
 * Starts `tokenvault serve` on a free port over `store` (with `env` added to this process's);
 * resolves once it printed its start lines, with its URL, those lines and its stderr so far.
 */
export async function serveCli(store: string, env: Record<string, string> = {}) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bin/tokenvault.ts', 'serve', '--port', '0', '--store', store],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  )
  children.push(child)
  let stderr = ''
  child.stderr!.on('data', (d) => {
    stderr += d
  })
  const lines: string[] = []
  const reader = createInterface({ input: child.stdout! })
  // The start lines end with `docs: …`, after the management key when there is one.
  await new Promise<void>((resolve, reject) => {
    reader.on('line', (line) => {
      lines.push(line)
      if (line.startsWith('docs: ')) resolve()
    })
    child.on('exit', () => reject(new Error(`the server exited: ${stderr}`)))
  })
  const url = lines.find((l) => l.startsWith('listening on '))!.slice('listening on '.length)
  const managementKey = lines.find((l) => l.startsWith('management key: '))?.slice('management key: '.length)
  return { child, url, lines, managementKey, stderr: () => stderr }
}

/** Ends every server `serveCli` started that is still running (SIGTERM), and waits for each. */
export async function stopCliServers(): Promise<void> {
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  }
}

/** A new database on the test server (`url`), its URL, and how to drop it (its sessions ended). */
export async function freshDatabase(url: string, prefix: string) {
  const database = `${prefix}_${randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database}`)
  const dbUrl = new URL(url)
  dbUrl.pathname = `/${database}`
  const drop = async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await admin.end()
  }
  return { url: dbUrl.toString(), drop }
}
