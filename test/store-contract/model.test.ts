import type { Store } from '../../src/store/contract.js'
import { ContractModel } from '../../testing/store/model.js'
import { storeContract } from '../../testing/store/suite.js'

/** The model as a plain object of bound methods: some suites wrap a store by spreading it. */
function asPlainStore(model: ContractModel): Store {
  const store: Record<string, unknown> = {}
  for (const name of Object.getOwnPropertyNames(ContractModel.prototype)) {
    const method = (model as unknown as Record<string, unknown>)[name]
    if (name !== 'constructor' && typeof method === 'function') store[name] = method.bind(model)
  }
  return store as unknown as Store
}

// The reference of the equivalence harness keeps the conformance suite's promises too.
storeContract({ name: 'contract model', open: async () => asPlainStore(new ContractModel()) })
