import { memoryStore } from '../../adapters/memory/index.js'
import { storeContract } from '../../testing/store/suite.js'

storeContract({ name: 'memory', open: async () => memoryStore() })
