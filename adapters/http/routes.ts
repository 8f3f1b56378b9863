import { asksAsyncReact } from '../../src/reactors/index.js'
import { DOCUMENT_ROUTES } from './document-routes.js'
import { HOSTED_ROUTES } from './hosted-routes.js'
import { KEY_ROUTES } from './key-routes.js'
import { LOG_ROUTES } from './log-routes.js'
import type { Route } from './route-types.js'
import { Router } from './router.js'
import { TOKEN_INTENT_ROUTES } from './token-intent-routes.js'
import { WEBHOOK_ROUTES } from './webhook-routes.js'

export type { Route } from './route-types.js'

/**
 * What a route's `run` answers when the operation was accepted to run later: the handler answers
 * 202 with no body (an asynchronous react).
 */
export const ACCEPTED: unique symbol = Symbol('accepted')

type Run = Route['run']
const op = (status: Route['status'], run: Run): Route => ({ status, query: false, run })
const list = (run: Run): Route => ({ status: 200, query: true, run })

/** Every route of the HTTP API (the design's HTTP table): method, path pattern, operation. */
export const ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  ['POST', '/tokens', op(201, (c, _p, _q, b) => c.tokens.create(b))],
  ['POST', '/tokenize', op(201, (c, _p, _q, b) => c.tokens.tokenize(b))],
  ['POST', '/detokenize', op(200, (c, _p, _q, b) => c.tokens.detokenize(b))],
  ['GET', '/tokens', list((c, _p, q) => c.tokens.list(q))],
  ['GET', '/v2/tokens', list((c, _p, q) => c.tokens.listV2(q))],
  // Literal segments win over parameters: `/tokens/search` is the search, never a token id.
  ['POST', '/tokens/search', op(200, (c, _p, _q, b) => c.tokens.search(b))],
  ['POST', '/v2/tokens/search', op(200, (c, _p, _q, b) => c.tokens.searchV2(b))],
  ['GET', '/tokens/:id', op(200, (c, [id]) => c.tokens.get(id!))],
  [
    'PATCH',
    '/tokens/:id',
    { ...op(200, (c, [id], _q, b) => c.tokens.update(id!, b)), mediaType: 'application/merge-patch+json' },
  ],
  ['DELETE', '/tokens/:id', op(204, (c, [id]) => c.tokens.delete(id!))],
  ['POST', '/tokens/:id/children/:child', op(204, (c, [id, ch]) => c.tokens.children.link(id!, ch!))],
  ['DELETE', '/tokens/:id/children/:child', op(204, (c, [id, ch]) => c.tokens.children.unlink(id!, ch!))],
  ['POST', '/tokens/:id/children', op(201, (c, [id], _q, b) => c.tokens.children.create(id!, b))],
  ['GET', '/tokens/:id/children', list((c, [id], q) => c.tokens.children.list(id!, q))],

  ['POST', '/transactions', op(201, (c, _p, _q, b) => c.transactions.create(b))],
  ['POST', '/transactions/:id/commit', op(200, (c, [id]) => c.transactions.commit(id!))],
  ['POST', '/transactions/:id/rollback', op(200, (c, [id]) => c.transactions.rollback(id!))],

  ['POST', '/reactor-formulas', op(201, (c, _p, _q, b) => c.reactorFormulas.create(b))],
  ['GET', '/reactor-formulas', list((c, _p, q) => c.reactorFormulas.list(q))],
  ['GET', '/reactor-formulas/:id', op(200, (c, [id]) => c.reactorFormulas.get(id!))],
  ['PUT', '/reactor-formulas/:id', op(200, (c, [id], _q, b) => c.reactorFormulas.update(id!, b))],
  ['DELETE', '/reactor-formulas/:id', op(204, (c, [id]) => c.reactorFormulas.delete(id!))],

  ['POST', '/reactors', op(201, (c, _p, _q, b) => c.reactors.create(b))],
  ['GET', '/reactors', list((c, _p, q) => c.reactors.list(q))],
  ['GET', '/reactors/:id', op(200, (c, [id]) => c.reactors.get(id!))],
  ['PUT', '/reactors/:id', op(200, (c, [id], _q, b) => c.reactors.update(id!, b))],
  ['PATCH', '/reactors/:id', op(200, (c, [id], _q, b) => c.reactors.patch(id!, b))],
  ['DELETE', '/reactors/:id', op(204, (c, [id]) => c.reactors.delete(id!))],
  [
    'POST',
    '/reactors/:id/react',
    op(200, (c, [id], _q, b) =>
      // The core decides: a `callback_url` makes the react asynchronous (the reference answers 202, no body).
      asksAsyncReact(b) ? c.reactors.reactAsync(id!, b).then(() => ACCEPTED) : c.reactors.react(id!, b),
    ),
  ],
  ['POST', '/reactors/:id/react-async', op(202, (c, [id], _q, b) => c.reactors.reactAsync(id!, b))],
  ['GET', '/reactors/:id/results/:requestId', op(200, (c, [id, r]) => c.reactors.result(id!, r!))],

  ['POST', '/sessions', op(201, (c, _p, _q, b) => c.sessions.create(b))],
  ['POST', '/sessions/authorize', op(200, (c, _p, _q, b) => c.sessions.authorize(b))],

  ['POST', '/applications', op(201, (c, _p, _q, b) => c.applications.create(b))],
  ['GET', '/applications', list((c, _p, q) => c.applications.list(q))],
  ['GET', '/applications/key', op(200, (c) => c.applications.getByKey())],
  ['GET', '/applications/:id', op(200, (c, [id]) => c.applications.get(id!))],
  ['PUT', '/applications/:id', op(200, (c, [id], _q, b) => c.applications.update(id!, b))],
  ['DELETE', '/applications/:id', op(204, (c, [id]) => c.applications.delete(id!))],
  ['POST', '/applications/:id/regenerate', op(200, (c, [id]) => c.applications.regenerateKey(id!))],
  ['POST', '/applications/:id/keys', op(201, (c, [id]) => c.applicationKeys.create(id!))],
  ['GET', '/applications/:id/keys', op(200, (c, [id]) => c.applicationKeys.list(id!))],
  ['GET', '/applications/:id/keys/:key', op(200, (c, [id, k]) => c.applicationKeys.get(id!, k!))],
  ['DELETE', '/applications/:id/keys/:key', op(204, (c, [id, k]) => c.applicationKeys.delete(id!, k!))],

  ['POST', '/proxies', op(201, (c, _p, _q, b) => c.proxies.create(b))],
  ['GET', '/proxies', list((c, _p, q) => c.proxies.list(q))],
  ['GET', '/proxies/:id', op(200, (c, [id]) => c.proxies.get(id!))],
  ['PUT', '/proxies/:id', op(200, (c, [id], _q, b) => c.proxies.update(id!, b))],
  [
    'PATCH',
    '/proxies/:id',
    { ...op(200, (c, [id], _q, b) => c.proxies.patch(id!, b)), mediaType: 'application/merge-patch+json' },
  ],
  ['DELETE', '/proxies/:id', op(204, (c, [id]) => c.proxies.delete(id!))],

  ['GET', '/tenants/self', op(200, (c) => c.tenants.self())],
  ['GET', '/permissions', list((c, _p, q) => c.permissions.list(q))],
  ...HOSTED_ROUTES,
  ...WEBHOOK_ROUTES,
  ...TOKEN_INTENT_ROUTES,
  ...KEY_ROUTES,
  ...LOG_ROUTES,
  ...DOCUMENT_ROUTES,
]

/** A router over `ROUTES`. */
export function apiRouter(): Router<Route> {
  const router = new Router<Route>()
  for (const [method, pattern, route] of ROUTES) router.add(method, pattern, route)
  return router
}
