/** Biome reads its configuration without a deprecation notice (the configuration is migrated). */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { root } from './spawn.js'

it('biome check prints no deprecation notice about biome.json', async () => {
  const biome = `${root}node_modules/.bin/biome`
  const { stdout, stderr } = await promisify(execFile)(biome, ['check', 'bin/checks.ts'], { cwd: root })
  expect(`${stdout}${stderr}`).not.toMatch(/deprecated|biome migrate/i)
}, 60_000)
