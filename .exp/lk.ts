import { fileStore } from '../adapters/file/index.js'
const s = await fileStore({ path: '/tmp/lk/s', log: () => {} })
console.log('open', process.pid)
await new Promise((r) => setTimeout(r, 8000))
