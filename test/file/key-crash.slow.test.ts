import { describe, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { counterSurvivesKill, sweepSurvivesKill } from '../encryption/key-crash.js'
import { tempDir } from './helpers.js'

describe('data keys on the file store under SIGKILL', () => {
  it('the seal counter never goes back: a killed process loses only unused reservations', async () => {
    const dir = await tempDir()
    await counterSurvivesKill(`file:${dir}`, () => fileStore({ path: dir }))
  }, 120_000)

  it('re-encryption killed midway resumes and ends with every record on the newest version, none lost', async () => {
    const dir = await tempDir()
    await sweepSurvivesKill(`file:${dir}`, () => fileStore({ path: dir }))
  }, 120_000)
})
