import { memoryStore } from '../../adapters/memory/index.js'
import { storeContract } from './suite.js'

storeContract({ name: 'memory', open: async () => memoryStore() })
