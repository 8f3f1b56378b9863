import { describe } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { nulInputCases } from './nul-input.js'

describe('U+0000 in input (memory store)', () => {
  nulInputCases(async () => memoryStore())
})
