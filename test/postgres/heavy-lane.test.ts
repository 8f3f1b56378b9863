import { once } from 'node:events'
import pg from 'pg'
import { afterAll, expect, it } from 'vitest'
import { freshDatabase, serveCli, stopCliServers } from './cli-servers.js'
import { callJson, describePostgres } from './database.js'

afterAll(stopCliServers)

/**
 * `tokenvault serve` over PostgreSQL with its heavy lane (bin/heavy-lane.ts): the lane's thread
 * opens the same database with a pool of its own (2 connections), and answers a key reading large tokens many at
 * once with what the main thread answers.
 */
describePostgres('heavy lane over PostgreSQL', (url) => {
  it("answers a heavy key's reads on its thread, as the main thread does, over the same database", async () => {
    const database = await freshDatabase(url, 'tv_lane')
    try {
      const server = await serveCli(database.url, { TOKENVAULT_HEAVY_LANE: 'on' })
      const base = server.url
      const management = server.managementKey!
      const call = (method: string, path: string, key: string, body?: unknown) =>
        callJson(base, method, path, key, body)
      const permissions = ['token:create', 'token:read']
      const rules = [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions }]
      const app = await call('POST', '/applications', management, {
        name: 'heavy',
        type: 'private',
        permissions,
        rules,
      })
      const key = app.body.key as string
      const big = await call('POST', '/tokens', key, { type: 'token', data: 'y'.repeat(60_000) })
      expect(big.status).toBe(201)
      const first = await call('GET', `/tokens/${big.body.id}`, key)
      const laneLines = () =>
        server
          .stderr()
          .split('\n')
          .filter((l) => l.endsWith(' lane'))
      for (let round = 0; round < 40 && laneLines().length === 0; round++) {
        const answers = await Promise.all(
          Array.from({ length: 32 }, () => call('GET', `/tokens/${big.body.id}`, key)),
        )
        for (const a of answers) expect(a).toEqual(first)
      }
      expect(server.stderr()).toContain('heavy lane: started')
      expect(laneLines().length).toBeGreaterThan(0)

      // The lane's pool: 2 connections at most, named, however many of its key's requests wait.
      const watcher = new pg.Client({ connectionString: database.url })
      await watcher.connect()
      const laneConnections = async () =>
        Number(
          (
            await watcher.query(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tokenvault lane'`,
            )
          ).rows[0].n,
        )
      let most = 0
      let watching = true
      const watch = (async () => {
        while (watching) most = Math.max(most, await laneConnections())
      })()
      const onLane = laneLines().length
      for (let round = 0; round < 10 && (most < 2 || laneLines().length === onLane); round++)
        await Promise.all(Array.from({ length: 64 }, () => call('GET', `/tokens/${big.body.id}`, key)))
      watching = false
      await watch
      await watcher.end()
      expect(laneLines().length).toBeGreaterThan(onLane)
      expect(most).toBe(2)
      server.child.kill('SIGTERM')
      expect((await once(server.child, 'exit'))[0]).toBe(0)
    } finally {
      await database.drop()
    }
  }, 120_000)
})
