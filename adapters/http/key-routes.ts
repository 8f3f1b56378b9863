import { clientKeyInput } from '../../src/client-keys/index.js'
import type { JsonSchema } from './response-schemas.js'
import type { Route, RouteDoc } from './route-types.js'

/**
 * Client encryption keys, as node-sdk 5's `client.keys` calls them: `/keys` create, list, get,
 * delete. Each is a mapping onto `client.keys`; the rules are in src/client-keys/.
 */

type Run = Route['run']
const op = (status: Route['status'], run: Run): Route => ({ status, query: false, run })

export const KEY_ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  ['POST', '/keys', op(201, (c, _p, _q, b) => c.keys.create(b))],
  ['GET', '/keys', op(200, (c) => c.keys.list())],
  ['GET', '/keys/:id', op(200, (c, [id]) => c.keys.get(id!))],
  ['DELETE', '/keys/:id', op(204, (c, [id]) => c.keys.delete(id!))],
]

const fields: Record<string, JsonSchema> = {
  id: { type: 'string' },
  key_id: { type: 'string' },
  expires_at: { type: 'string', format: 'date-time' },
}
const key: JsonSchema = { type: 'object', properties: fields, required: ['id', 'key_id', 'expires_at'] }
const created: JsonSchema = {
  type: 'object',
  properties: { ...fields, public_key_pem: { type: 'string' } },
  required: ['id', 'key_id', 'public_key_pem', 'expires_at'],
}

/** The OpenAPI entries of `KEY_ROUTES` (spread into `ROUTE_DOCS`). */
export const KEY_ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /keys': {
    tag: 'Client encryption keys',
    summary:
      'Create a client encryption key (`keys:create`): an X25519 key pair made in the vault; the public key is answered this once, the private key never; `expires_at` at most a year ahead (default: a year); at most 50 per tenant',
    body: clientKeyInput,
    response: created,
  },
  'GET /keys': {
    tag: 'Client encryption keys',
    summary: "List the tenant's client encryption keys (`keys:read`), without their keys",
    response: { type: 'array', items: key },
  },
  'GET /keys/:id': {
    tag: 'Client encryption keys',
    summary: 'Get a client encryption key (`keys:read`), without its keys',
    response: key,
  },
  'DELETE /keys/:id': {
    tag: 'Client encryption keys',
    summary: 'Delete a client encryption key (`keys:delete`): a JWE made to it no longer decrypts',
  },
}
