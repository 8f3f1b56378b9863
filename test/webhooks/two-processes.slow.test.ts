import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { twoProcessesDeliverOnce } from './two-processes.js'

it('file store: two processes deliver 40 events once between them; after one is SIGKILLed mid-delivery the other delivers its 6 once', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'tv-two-deliverers-')), 'store')
  await twoProcessesDeliverOnce(`file:${dir}`, () => fileStore({ path: dir }))
}, 180_000)
