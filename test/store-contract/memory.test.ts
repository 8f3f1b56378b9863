import { memoryStore } from '../../adapters/memory/index.js'
import { storeEquivalence } from '../../testing/store/equivalence.js'
import { storeContract } from '../../testing/store/suite.js'

storeContract({ name: 'memory', open: async () => memoryStore() })
storeEquivalence({ name: 'memory', open: async () => memoryStore(), runs: 10 })
