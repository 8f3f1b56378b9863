import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { asyncReactSurvivesKill } from './async-react-crash.js'

it('file store: a react accepted by a process SIGKILLed mid-run is run by the next process after its claim', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'tv-async-crash-')), 'store')
  await asyncReactSurvivesKill(`file:${dir}`, () => fileStore({ path: dir }))
}, 120_000)
