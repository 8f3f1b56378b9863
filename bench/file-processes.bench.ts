/**
 * Two processes on one file store directory against one: durable single-token writes (32 writers
 * per process) and gets (one reader loop per process), for 3 s each, run at once in every process.
 * `npx tsx bench/file-processes.bench.ts`. Each process opens the store itself (as two `tokenvault
 * serve` processes would); LMDB admits one writer at a time across them, and readers never wait.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fileStore } from '../adapters/file/index.js'
import type { StoredToken } from '../src/kernel/types.js'

const SECONDS = 3
const TENANT = 'bench-tenant'
const token = (id: string): StoredToken => ({
  id,
  tenant_id: TENANT,
  type: 'card',
  data: { sealed: 'x'.repeat(900) },
  containers: ['/pci/high/'],
  metadata: {},
  created_by: 'bench-app',
  created_at: '2030-01-01T00:00:00.000Z',
})

/** In a child: `MODE DIR NAME`: writes or reads for SECONDS, then prints the count per second. */
async function child(mode: string, dir: string, name: string) {
  const store = await fileStore({ path: dir })
  const until = performance.now() + SECONDS * 1000
  let n = 0
  if (mode === 'write') {
    const writer = async (w: number) => {
      for (let i = 0; performance.now() < until; i++) {
        await store.write({ ops: [{ op: 'token.put', token: token(`${name}-${w}-${i}`) }] })
        n++
      }
    }
    await Promise.all(Array.from({ length: 32 }, (_, w) => writer(w)))
  } else {
    while (performance.now() < until) {
      for (let i = 0; i < 100; i++) await store.getToken(TENANT, `seed-${(n + i) % 1000}`)
      n += 100
    }
  }
  await store.close()
  process.stdout.write(`${n / SECONDS}\n`)
}

const run = (mode: string, dir: string, processes: number) =>
  Promise.all(
    Array.from(
      { length: processes },
      (_, p) =>
        new Promise<number>((resolve, reject) => {
          const c = spawn(
            process.execPath,
            ['--import', 'tsx', fileURLToPath(import.meta.url), mode, dir, `p${p}-${Date.now()}`],
            {
              stdio: ['ignore', 'pipe', 'inherit'],
            },
          )
          let out = ''
          c.stdout.on('data', (d) => (out += d))
          c.on('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`child ${code}`))))
        }),
    ),
  ).then((rates) => rates.reduce((a, b) => a + b, 0))

const [mode, dir, name] = process.argv.slice(2)
if (mode === 'write' || mode === 'read') await child(mode, dir!, name!)
else {
  const root = await mkdtemp(join(tmpdir(), 'tokenvault-bench-procs-'))
  try {
    const path = join(root, 'store')
    const seed = await fileStore({ path })
    await seed.write({
      ops: Array.from({ length: 1000 }, (_, i) => ({ op: 'token.put' as const, token: token(`seed-${i}`) })),
    })
    await seed.close()
    for (const m of ['write', 'read']) {
      const one = await run(m, path, 1)
      const two = await run(m, path, 2)
      console.log(
        `${m === 'write' ? 'durable writes (32 writers each)' : 'gets'}: one process ${one.toFixed(0)}/s, two processes ${two.toFixed(0)}/s (${(two / one).toFixed(2)}× one)`,
      )
    }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}
