import { ContractModel } from '../../testing/store/model.js'
import { storeContract } from '../../testing/store/suite.js'

// The reference of the equivalence harness keeps the conformance suite's promises too. It is a
// class, handed over as it is: every wrapper (the sealed store, the cost suite's counter) delegates
// each method by name, so prototype methods work.
storeContract({ name: 'contract model', open: async () => new ContractModel() })
