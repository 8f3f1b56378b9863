/**
 * A Next.js (App Router) route handler serving the vault under `/api/vault`: save as
 * `app/api/vault/[...path]/route.ts`, with `serverExternalPackages: ['tokenvault']` in next.config
 * (examples/next.config.mjs). Next hands each method's function the WHATWG `Request` with the full
 * path, so the handler takes `basePath: '/api/vault'` (and `/api/vault/openapi.json` names it). A
 * route file exports only its HTTP methods (and Next's route options): nothing else.
 */
import { createHttpHandler } from 'tokenvault/adapters/http'
import { createTestVault } from 'tokenvault/testing'

// In an app: createService({ store, clock }) once per process; a test vault keeps the example short.
const vault = await createTestVault()
const handler = createHttpHandler(vault.service, { basePath: '/api/vault' })

export const GET = handler
export const HEAD = handler
export const POST = handler
export const PUT = handler
export const PATCH = handler
export const DELETE = handler
export const OPTIONS = handler
