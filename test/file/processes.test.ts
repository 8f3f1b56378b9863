import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { start } from '../cli/spawn.js'
import { T } from './fixtures.js'
import { closed, startChild, tempDir } from './helpers.js'

/** Two `tokenvault serve` processes on one file store directory. */
describe('file store shared by two processes', () => {
  it('serves from both: a token written through one reads through the other at once, one nonce and one commit have one winner across both', async () => {
    const dir = await tempDir()
    const store = `file:${join(dir, 'vault')}`
    const args = ['serve', '--port', '0', '--store', store, '--log', 'none']
    const a = start(args, dir)
    const urlA = (await a.line(1)).slice('listening on '.length)
    const management = (await a.line(2)).slice('management key: '.length)
    const b = start(args, dir)
    const urlB = (await b.line(1)).slice('listening on '.length)
    // The second process found the store made: no second management key among its start lines.
    await b.line(4)
    expect(b.lines.filter((l) => l.startsWith('management key:'))).toEqual([])

    const call = async (url: string, method: string, path: string, key: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      const text = await response.text()
      return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null }
    }
    const perms = ['token:create', 'token:read']
    const rule = { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: perms }
    const priv = await call(urlA, 'POST', '/applications', management, {
      name: 'backend',
      type: 'private',
      permissions: perms,
      rules: [rule],
    })
    expect(priv.status).toBe(201)
    const privateKey = priv.body!['key'] as string
    const pub = await call(urlB, 'POST', '/applications', management, {
      name: 'browser',
      type: 'public',
      permissions: ['token:create'],
    })
    expect(pub.status).toBe(201)
    const publicKey = pub.body!['key'] as string

    // Written through A (with a key B never saw), read through B at once; and the other way round.
    for (const [from, to] of [
      [urlA, urlB],
      [urlB, urlA],
    ] as const) {
      const created = await call(from, 'POST', '/tokens', privateKey, {
        type: 'token',
        data: `secret ${from}`,
      })
      expect(created.status).toBe(201)
      const read = await call(to, 'GET', `/tokens/${created.body!['id']}`, privateKey)
      expect(read.status).toBe(200)
      expect(read.body!['data']).toBe(`secret ${from}`)
    }

    // 20 concurrent authorizations of one nonce, split across both processes: exactly one wins.
    const session = await call(urlA, 'POST', '/sessions', publicKey)
    expect(session.status).toBe(201)
    const nonce = session.body!['nonce'] as string
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(i % 2 === 0 ? urlA : urlB, 'POST', '/sessions/authorize', privateKey, {
          nonce,
          rules: [{ ...rule, permissions: ['token:read'] }],
        }),
      ),
    )
    const statuses = answers.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 200)).toHaveLength(1)
    expect(statuses.filter((s) => s === 409)).toHaveLength(19)
    // The session authorized through one process works through the other.
    const sessionKey = session.body!['session_key'] as string
    const first = await call(urlA, 'POST', '/tokens', privateKey, { type: 'token', data: 'for the session' })
    for (const url of [urlA, urlB])
      expect((await call(url, 'GET', `/tokens/${first.body!['id']}`, sessionKey)).status).toBe(200)

    // 20 concurrent commits of one transaction, split across both processes: exactly one wins.
    const tx = await call(urlB, 'POST', '/transactions', privateKey)
    expect(tx.status).toBe(201)
    const commits = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(i % 2 === 0 ? urlA : urlB, 'POST', `/transactions/${tx.body!['id']}/commit`, privateKey),
      ),
    )
    expect(commits.filter((r) => r.status === 200)).toHaveLength(1)
    expect(commits.filter((r) => r.status === 409)).toHaveLength(19)

    a.child.kill('SIGTERM')
    b.child.kill('SIGTERM')
    expect((await a.exited)[0]).toBe(0)
    expect((await b.exited)[0]).toBe(0)
  }, 60_000)

  it('reads what another process acknowledged as soon as it is acknowledged', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir })
    // A child writes 50 batches one at a time; each acknowledgement is checked here at once.
    const child = startChild(['write', dir, 'x', '50', '1'])
    const missing: string[] = []
    let checked = 0
    let buffered = ''
    const pending: Promise<void>[] = []
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) {
        if (line === 'done') child.kill('SIGKILL')
        if (!line.startsWith('ack ')) continue
        const id = line.slice(4)
        pending.push(
          store.getToken(T, `${id}-b`).then((t) => {
            checked++
            if (t === null) missing.push(id)
          }),
        )
      }
    })
    await closed(child)
    await Promise.all(pending)
    expect(checked).toBe(50)
    expect(missing).toEqual([])
    await store.close()
  }, 30_000)
})
