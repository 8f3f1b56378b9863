import { createTokenIntentInput } from '../../src/tokens/index.js'
import type { JsonSchema } from './response-schemas.js'
import type { Route, RouteDoc } from './route-types.js'

/**
 * The token intents API, as node-sdk 5's `client.tokenIntents` (create, get, delete) and
 * basis-theory-js 4's `bt.tokenIntents` (create, delete) call it. Each is a mapping onto
 * `client.tokenIntents`; the rules are in src/tokens/token-intents.ts.
 */

type Run = Route['run']
const op = (status: Route['status'], run: Run): Route => ({ status, query: false, run })

export const TOKEN_INTENT_ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  ['POST', '/token-intents', op(201, (c, _p, _q, b) => c.tokenIntents.create(b))],
  ['GET', '/token-intents/:id', op(200, (c, [id]) => c.tokenIntents.get(id!))],
  ['DELETE', '/token-intents/:id', op(204, (c, [id]) => c.tokenIntents.delete(id!))],
]

const nullableString: JsonSchema = { type: ['string', 'null'] }

const tokenIntent: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    tenant_id: { type: 'string' },
    type: { type: 'string' },
    card: {
      type: 'object',
      properties: {
        bin: { type: 'string' },
        last4: { type: 'string' },
        expiration_month: { type: 'integer' },
        expiration_year: { type: 'integer' },
        brand: nullableString,
        funding: nullableString,
        authentication: nullableString,
      },
    },
    bank: {
      type: 'object',
      properties: { routing_number: nullableString, account_number_last4: { type: 'string' } },
    },
    fingerprint: { type: 'string' },
    created_by: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    expires_at: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'tenant_id', 'type', 'created_by', 'created_at', 'expires_at'],
}

/** The OpenAPI entries of `TOKEN_INTENT_ROUTES` (spread into `ROUTE_DOCS`). */
export const TOKEN_INTENT_ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /token-intents': {
    tag: 'Token Intents',
    summary:
      'Create a token intent (`token-intent:create`, which a public key may hold): `data` is checked as a token of `type` is, sealed at rest and never answered; it expires a day later. Convert it with `token_intent_id` on token create',
    body: createTokenIntentInput,
    response: tokenIntent,
  },
  'GET /token-intents/:id': {
    tag: 'Token Intents',
    summary: 'Get a token intent (`token-intent:read`), without its data; an expired one is not found',
    response: tokenIntent,
  },
  'DELETE /token-intents/:id': {
    tag: 'Token Intents',
    summary: 'Delete a token intent before it expires (`token-intent:delete`)',
  },
}
