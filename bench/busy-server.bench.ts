/**
 * What a request costs a node:http server in processor time as the server's own work per request
 * grows: a raw server answering the same bytes after `w` µs of busy work (w = 0, 20, 40, 70), in a
 * child process, loaded by autocannon at 10 connections on loopback for 3 s each. The server's CPU
 * time per request (user + system, from /proc) is printed beside `base + w`, what it would be if
 * the work added only itself. On a 2-core machine shared with the load generator it adds more: a
 * slower server leaves the generator idle between answers, and each answer then costs the kernel
 * a wake-up. So a server's CPU per request, against a faster floor's, is not the ratio of their
 * own work. Run: `npx tsx bench/busy-server.bench.ts`.
 */
import { fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import autocannon from 'autocannon'

const ROLE = '--busy-server-child'
const body = JSON.stringify({ id: 'x'.repeat(36), type: 'card', data: { number: '4242424242424242' } })
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }

/** CPU time (user + system) of a process so far, in µs, from /proc. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

if (process.argv.includes(ROLE)) {
  const work = Number(process.argv[process.argv.indexOf(ROLE) + 1])
  const server = createServer((_req, res) => {
    void Promise.resolve().then(() => {
      const until = performance.now() + work / 1000
      while (performance.now() < until);
      res.writeHead(200, headers).end(body)
    })
  })
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port))
} else {
  let base = Number.NaN
  for (const work of [0, 20, 40, 70]) {
    const child = fork(new URL(import.meta.url).pathname, [ROLE, String(work)], {
      execArgv: ['--import', 'tsx'],
    })
    const port = await new Promise<number>((resolve) => child.once('message', (p) => resolve(p as number)))
    const url = `http://127.0.0.1:${port}/`
    await autocannon({ url, connections: 10, duration: 1 })
    const before = cpuOf(child.pid!)
    const result = await autocannon({ url, connections: 10, duration: 3 })
    const perRequest = (cpuOf(child.pid!) - before) / result.requests.total
    if (work === 0) base = perRequest
    console.log(
      `${work} µs of work: ${Math.round(result.requests.average)} req/s, ${perRequest.toFixed(1)} µs CPU per request (base + work: ${(base + work).toFixed(1)})`,
    )
    child.kill()
  }
}
