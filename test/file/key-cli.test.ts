import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createService, manualClock, systemClock } from '../../entry/index.js'
import { ROOT, tempDir } from './helpers.js'

const run = promisify(execFile)
const CLI = join(ROOT, 'bin/tokenvault.ts')

describe('tokenvault keys rotate | reencrypt | destroy on a file store', () => {
  it('rotates, re-encrypts with a progress line (bar, counts, rate), retires v1, and destroys', async () => {
    const dir = await tempDir()
    const keyFile = join(dir, 'master.key')
    const masterKey = randomBytes(32)
    writeFileSync(keyFile, `${masterKey.toString('base64')}\n`, { mode: 0o600 })
    const store = `file:${join(dir, 'data')}`
    const opened = await fileStore({ path: join(dir, 'data') })
    const service = createService({ store: opened, clock: systemClock, runner: null, masterKey })
    const tenant = await service.admin.createTenant({ name: 'cli' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'app',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [
        { priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] },
      ],
    })
    const ids: string[] = []
    for (let i = 0; i < 30; i++)
      ids.push((await service.connect(key).tokens.create({ type: 'token', data: i })).id)
    // Rotated a minute ago (past twice the 15 s refresh), so the sweep may retire v1 at once.
    const earlier = createService({
      store: opened,
      clock: manualClock(new Date(Date.now() - 60_000)),
      runner: null,
      masterKey,
    })
    await earlier.admin.rotateDataKey({ tenantId: tenant.id })
    await service.close()
    const cli = (...args: string[]) =>
      run(
        process.execPath,
        ['--import', 'tsx', CLI, ...args, '--store', store, '--master-key-file', keyFile],
        {
          cwd: ROOT,
        },
      )
    const swept = await cli('keys', 'reencrypt', '--batch-size', '10')
    expect(swept.stderr).toMatch(
      new RegExp(
        `tenant ${tenant.id} \\[#{20}\\] 30/30 re-sealed \\(100%\\), \\d+ records/s, older versions retired`,
      ),
    )
    expect(swept.stderr).toMatch(/\[#{7}-{13}\] 10\/30 re-sealed \(33%\), \d+ records\/s/)
    expect(swept.stdout).toContain(
      `tenant ${tenant.id}: every record on data key version 2; versions held: 2`,
    )
    const rotated = await cli('keys', 'rotate', '--tenant', tenant.id)
    expect(rotated.stdout).toBe(`tenant ${tenant.id}: data key version 3 is current\n`)
    const destroyed = await cli('keys', 'destroy', '--tenant', tenant.id)
    expect(destroyed.stdout).toContain('data keys destroyed')
    const after = await fileStore({ path: join(dir, 'data') })
    const again = createService({ store: after, clock: systemClock, runner: null, masterKey })
    await expect(again.connect(key).tokens.get(ids[0]!)).rejects.toMatchObject({ code: 'unreadable' })
    await again.close()
  }, 120_000)
})
