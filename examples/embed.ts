import { createService, manualClock } from 'tokenvault'
import { memoryStore } from 'tokenvault/adapters/memory'

// A vault in this process, on the memory store, with a clock the test drives.
const clock = manualClock('2030-01-01T00:00:00Z')
const vault = createService({ store: memoryStore(), clock })
const tenant = await vault.admin.createTenant({ name: 'acme' })
const { key } = await vault.admin.createApplication({
  tenantId: tenant.id,
  name: 'backend',
  type: 'private',
  permissions: ['token:create', 'token:read'],
  rules: [
    {
      description: 'every token',
      priority: 1,
      container: '/',
      transform: 'reveal',
      permissions: ['token:create', 'token:read'],
    },
  ],
})

const client = vault.connect(key)
const card = await client.tokens.create({ type: 'card', data: { number: '4242424242424242' }, mask: '4242' })
const cvc = await client.tokens.children.create(card.id, { type: 'cvc', data: '123' })
const children = await client.tokens.children.list(card.id)
console.log(children.data[0]?.id === cvc.id, (await client.tokens.get(card.id)).data)
// → true { number: '4242424242424242' }
await vault.close()
