import {
  createApplicationInput,
  listInput as listApplicationsInput,
  listPermissionsInput,
  updateApplicationInput,
} from '../../src/applications/index.js'
import { emptyBody } from '../../src/kernel/index.js'
import {
  createReactorInput,
  formulaInput,
  listFormulasInput,
  listReactorsInput,
  patchReactorInput,
  reactInput,
  updateReactorInput,
} from '../../src/reactors/index.js'
import { listV2Input, searchInput, searchV2Input } from '../../src/search/index.js'
import { authorizeSessionInput } from '../../src/sessions/index.js'
import { createTokenInput, listChildrenInput, updateTokenInput } from '../../src/tokens/index.js'
import { DOCUMENT_ROUTE_DOCS } from './document-routes.js'
import { HOSTED_ROUTE_DOCS } from './hosted-routes.js'
import { KEY_ROUTE_DOCS } from './key-routes.js'
import { LOG_ROUTE_DOCS } from './log-routes.js'
import { PROXY_ROUTE_DOCS } from './proxy-routes.js'
import { cursorPageOf, type JsonSchema, listOf, pageOf, schemaRef } from './response-schemas.js'
import type { RouteDoc } from './route-types.js'
import { TOKEN_INTENT_ROUTE_DOCS } from './token-intent-routes.js'
import { WEBHOOK_ROUTE_DOCS } from './webhook-routes.js'

export type { RouteDoc } from './route-types.js'

const anyJson: JsonSchema = {}
const token = schemaRef('Token')

/**
 * The documentation of every route, keyed `METHOD /pattern` as in `ROUTES`. The OpenAPI document
 * is built from `ROUTES` and refuses a route missing here, so the two can't drift apart.
 */
export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /tokens': {
    tag: 'Tokens',
    summary:
      'Create a token: its type validates `data` and gives default containers, mask and fingerprint expression; with `deduplicate_token`, a token of the same fingerprint answers instead (`_extras.deduplicated`)',
    body: createTokenInput,
    response: token,
  },
  'POST /tokenize': {
    operationId: 'tokenize',
    tag: 'Tokens',
    summary: 'Tokenize: every token body in the request (any JSON shape) becomes a token',
    body: null,
    response: schemaRef('TokenTree'),
  },
  'POST /detokenize': {
    operationId: 'detokenize',
    tag: 'Tokens',
    summary: 'Detokenize: `{{ id }}` expressions in the request are replaced by token data',
    body: null,
    response: anyJson,
  },
  'GET /tokens': {
    tag: 'Tokens',
    summary: 'List tokens',
    query: listChildrenInput,
    response: pageOf('Token'),
  },
  'GET /v2/tokens': {
    tag: 'Tokens',
    summary:
      "List tokens by cursor (`start` is the previous page's `pagination.next`), filtered by type, container, metadata or fingerprint",
    query: listV2Input,
    response: cursorPageOf('Token'),
  },
  'POST /tokens/search': {
    operationId: 'searchTokens',
    tag: 'Tokens',
    summary:
      'Search tokens with the query language (`field:value`, phrases, AND/OR/NOT, parentheses, wildcards, timestamp ranges; `data` through search indexes)',
    body: searchInput,
    response: pageOf('Token'),
  },
  'POST /v2/tokens/search': {
    operationId: 'searchTokensV2',
    tag: 'Tokens',
    summary: "Search tokens by cursor (`start` is the previous page's `pagination.next`)",
    body: searchV2Input,
    response: cursorPageOf('Token'),
  },
  'GET /tokens/:id': { tag: 'Tokens', summary: 'Get a token', response: token },
  'PATCH /tokens/:id': {
    tag: 'Tokens',
    summary: 'Update a token (JSON merge patch)',
    body: updateTokenInput,
    response: token,
  },
  'DELETE /tokens/:id': { tag: 'Tokens', summary: 'Delete a token and its associations' },
  'POST /tokens/:id/children/:child': {
    operationId: 'linkTokenChild',
    tag: 'Tokens',
    summary: 'Associate a child token',
  },
  'DELETE /tokens/:id/children/:child': {
    operationId: 'unlinkTokenChild',
    tag: 'Tokens',
    summary: 'Remove an association',
  },
  'POST /tokens/:id/children': {
    tag: 'Tokens',
    summary: 'Create a child token',
    body: createTokenInput,
    response: token,
  },
  'GET /tokens/:id/children': {
    tag: 'Tokens',
    summary: 'List child tokens',
    query: listChildrenInput,
    response: pageOf('Token'),
  },

  'POST /transactions': {
    tag: 'Transactions',
    summary: 'Open a transaction',
    body: emptyBody,
    response: schemaRef('Transaction'),
  },
  'POST /transactions/:id/commit': {
    operationId: 'commitTransaction',
    tag: 'Transactions',
    summary: 'Commit a transaction',
  },
  'POST /transactions/:id/rollback': {
    operationId: 'rollbackTransaction',
    tag: 'Transactions',
    summary: 'Roll back a transaction',
  },

  'POST /reactor-formulas': {
    tag: 'Reactor formulas',
    summary: 'Create a formula',
    body: formulaInput,
    response: schemaRef('ReactorFormula'),
  },
  'GET /reactor-formulas': {
    tag: 'Reactor formulas',
    summary: 'List formulas',
    query: listFormulasInput,
    response: pageOf('ReactorFormula'),
  },
  'GET /reactor-formulas/:id': {
    tag: 'Reactor formulas',
    summary: 'Get a formula',
    response: schemaRef('ReactorFormula'),
  },
  'PUT /reactor-formulas/:id': {
    tag: 'Reactor formulas',
    summary: 'Replace a formula',
    body: formulaInput,
    response: schemaRef('ReactorFormula'),
  },
  'DELETE /reactor-formulas/:id': { tag: 'Reactor formulas', summary: 'Delete a formula' },

  'POST /reactors': {
    tag: 'Reactors',
    summary: 'Create a reactor',
    body: createReactorInput,
    response: schemaRef('Reactor'),
  },
  'GET /reactors': {
    tag: 'Reactors',
    summary: 'List reactors',
    query: listReactorsInput,
    response: pageOf('Reactor'),
  },
  'GET /reactors/:id': { tag: 'Reactors', summary: 'Get a reactor', response: schemaRef('Reactor') },
  'PUT /reactors/:id': {
    tag: 'Reactors',
    summary: 'Replace a reactor',
    body: updateReactorInput,
    response: schemaRef('Reactor'),
  },
  'PATCH /reactors/:id': {
    operationId: 'patchReactor',
    tag: 'Reactors',
    summary: 'Update a reactor',
    body: patchReactorInput,
    response: schemaRef('Reactor'),
  },
  'DELETE /reactors/:id': { tag: 'Reactors', summary: 'Delete a reactor' },
  'POST /reactors/:id/react': {
    operationId: 'react',
    tag: 'Reactors',
    summary:
      'Run a reactor. With `callback_url` (an origin of the egress allow-list, else 400) the run is asynchronous: 202 with no body, the result or error POSTed to `callback_url` when done, within `timeout_ms`',
    body: reactInput,
    response: schemaRef('ReactResult'),
    accepted:
      'Accepted (`callback_url` given): the run goes on after the answer; its result (as the 200 body) or its error (`{ status, detail, errors? }`) is POSTed to `callback_url`',
  },
  'POST /reactors/:id/react-async': {
    operationId: 'reactAsync',
    tag: 'Reactors',
    summary:
      'Run a reactor asynchronously: checked now, recorded in the durable outbox, answered 202 `{ asyncReactorRequestId }`; the run follows (after a restart too) and its result is kept 24 h',
    body: reactInput,
  },
  'GET /reactors/:id/results/:requestId': {
    operationId: 'getReactorResult',
    tag: 'Reactors',
    summary:
      'The result of an asynchronous react (as the 200 of `/react`, or its error); 409 while it runs, 404 unknown or after 24 h',
    response: schemaRef('ReactResult'),
  },

  'POST /sessions': {
    tag: 'Sessions',
    summary: 'Create a session (public key)',
    body: emptyBody,
    response: schemaRef('CreatedSession'),
  },
  'POST /sessions/authorize': {
    operationId: 'authorizeSession',
    tag: 'Sessions',
    summary: 'Authorize a session (private key)',
    body: authorizeSessionInput,
  },

  'POST /applications': {
    tag: 'Applications',
    summary: 'Create an application (the answer holds its key, shown once)',
    body: createApplicationInput,
    response: schemaRef('Application'),
  },
  'GET /applications': {
    tag: 'Applications',
    summary: 'List applications',
    query: listApplicationsInput,
    response: pageOf('Application'),
  },
  'GET /applications/key': {
    operationId: 'getApplicationByKey',
    tag: 'Applications',
    summary: 'The application of the calling key',
    response: schemaRef('Application'),
  },
  'GET /applications/:id': {
    tag: 'Applications',
    summary: 'Get an application',
    response: schemaRef('Application'),
  },
  'PUT /applications/:id': {
    tag: 'Applications',
    summary: 'Replace an application',
    body: updateApplicationInput,
    response: schemaRef('Application'),
  },
  'DELETE /applications/:id': { tag: 'Applications', summary: 'Delete an application' },
  'POST /applications/:id/regenerate': {
    operationId: 'regenerateApplicationKey',
    tag: 'Applications',
    summary: 'Replace every key of an application by one new key (the answer holds it, shown once)',
    response: schemaRef('Application'),
  },
  'POST /applications/:id/keys': {
    tag: 'Applications',
    summary: 'Create a key (the answer holds it, shown once)',
    response: schemaRef('ApplicationKey'),
  },
  'GET /applications/:id/keys': {
    tag: 'Applications',
    summary: "List an application's keys",
    response: listOf('ApplicationKey'),
  },
  'GET /applications/:id/keys/:key': {
    tag: 'Applications',
    summary: 'Get a key (without the key itself)',
    response: schemaRef('ApplicationKey'),
  },
  'DELETE /applications/:id/keys/:key': { tag: 'Applications', summary: 'Revoke a key' },

  'GET /tenants/self': {
    operationId: 'getSelfTenant',
    tag: 'Tenants',
    summary: "The caller's tenant",
    response: schemaRef('Tenant'),
  },
  'GET /permissions': {
    tag: 'Tenants',
    summary: 'The permission catalogue',
    query: listPermissionsInput,
    response: listOf('PermissionInfo'),
  },
  ...HOSTED_ROUTE_DOCS,
  ...WEBHOOK_ROUTE_DOCS,
  ...TOKEN_INTENT_ROUTE_DOCS,
  ...KEY_ROUTE_DOCS,
  ...PROXY_ROUTE_DOCS,
  ...LOG_ROUTE_DOCS,
  ...DOCUMENT_ROUTE_DOCS,
}
