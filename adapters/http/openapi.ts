import { toJsonSchema } from '@valibot/to-json-schema'
import * as v from 'valibot'
import { NOT_BUILT, NOT_BUILT_DOCS } from './not-built.js'
import { operationIdOf } from './operation-ids.js'
import { type JsonSchema, RESPONSE_SCHEMAS } from './response-schemas.js'
import { ROUTE_DOCS, type RouteDoc } from './route-docs.js'
import { ROUTES } from './routes.js'
import { TEST_CONTROL_PATHS } from './test-control-docs.js'
import { PACKAGE_VERSION } from './version.js'

/** What the document depends on: where the API is mounted and its header names. */
export interface OpenApiOptions {
  /** The path prefix the handler serves under (`''` for none); the document's server URL. */
  basePath: string
  /**
   * Prefixes of the API key, transaction and idempotency headers (`SVC`, `BT`, …): the first names
   * the documented headers; each has its API key security scheme (any one of them authenticates).
   */
  headerPrefixes: readonly string[]
  /** Documents the `/_test/` control plane too (test mode), with its bearer token scheme. */
  testControl?: boolean
}

type Schema = v.GenericSchema<unknown, unknown>

/** A valibot schema as JSON Schema 2020-12: what the core accepts, checks it can't express left out. */
function fromValibot(schema: Schema): JsonSchema {
  const out = toJsonSchema(schema, { target: 'draft-2020-12', typeMode: 'input', errorMode: 'ignore' })
  const { $schema: _, ...rest } = out as JsonSchema
  return tidy(rest) as JsonSchema
}

/**
 * Drops what the converter emits that would mislead: a number given as a number or a decimal
 * string (query paging) comes out as `anyOf` beside `type: integer`; the query string carries it
 * as an integer, so the `type` stays.
 */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy)
  if (node === null || typeof node !== 'object') return node
  const out: JsonSchema = {}
  for (const [key, value] of Object.entries(node)) out[key] = tidy(value)
  if (out.anyOf !== undefined && out.type !== undefined) delete out.anyOf
  return out
}

/** The query parameters of a list route, one per property of its query schema. */
function queryParameters(schema: Schema): JsonSchema[] {
  const json = fromValibot(schema)
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>
  return Object.entries(properties).map(([name, property]) =>
    name === 'metadata'
      ? {
          name,
          in: 'query',
          description: 'Metadata filters: `metadata.<key>=<value>` or `metadata[<key>]=<value>`.',
          style: 'deepObject',
          explode: true,
          schema: { type: 'object', additionalProperties: { type: 'string' } },
        }
      : { name, in: 'query', required: false, style: 'form', explode: true, schema: property },
  )
}

/** Whether a body schema accepts no body at all. */
const optionalBody = (schema: Schema) => v.safeParse(schema, undefined).success

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
})

function operation(
  method: string,
  pattern: string,
  status: number,
  mediaType: string | undefined,
  doc: RouteDoc,
  headers: { transaction: string; idempotency: string },
): JsonSchema {
  const parameters: JsonSchema[] = [...pattern.matchAll(/:(\w+)/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }))
  if (doc.query) parameters.push(...queryParameters(doc.query))
  parameters.push({
    name: headers.transaction,
    in: 'header',
    required: false,
    description: 'Runs the operation inside this open transaction.',
    schema: { type: 'string' },
  })
  if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
    parameters.push({
      name: headers.idempotency,
      in: 'header',
      required: false,
      description: 'Repeating the request with the same key answers the first answer again.',
      schema: { type: 'string' },
    })
  }
  const op: JsonSchema = {
    operationId: doc.operationId ?? operationIdOf(method, pattern),
    summary: doc.summary,
    tags: [doc.tag],
    parameters,
    responses: {
      [status]: doc.response
        ? { description: 'Success', content: { 'application/json': { schema: doc.response } } }
        : { description: 'Success, no body' },
      ...(doc.accepted ? { 202: { description: doc.accepted } } : {}),
      '4XX': problemResponse(
        'A problem (RFC 7807): bad input, no key, no permission, not found, conflict, or a bound of the tenant reached (429, retry after `Retry-After` seconds)',
      ),
      '503': problemResponse('The store is unavailable; retry after `Retry-After` seconds'),
    },
  }
  if (doc.responseMediaType !== undefined)
    (op.responses as Record<string, unknown>)[status] = {
      description: 'Success',
      content: { [doc.responseMediaType]: { schema: doc.response ?? { type: 'string', format: 'binary' } } },
    }
  if (doc.form !== undefined)
    op.requestBody = { required: true, content: { 'multipart/form-data': { schema: doc.form } } }
  if (doc.body !== undefined) {
    op.requestBody = {
      required: doc.body === null ? true : !optionalBody(doc.body),
      content: {
        [mediaType ?? 'application/json']: { schema: doc.body === null ? {} : fromValibot(doc.body) },
      },
    }
  }
  return op
}

const plain = (operationId: string, summary: string, schema: JsonSchema) => ({
  get: {
    operationId,
    summary,
    tags: ['Service'],
    security: [],
    responses: { 200: { description: 'Success', content: { 'application/json': { schema } } } },
  },
})

/** A route of the reference API that is not built: listed, answering only 501 (`x-not-built`). */
function notBuiltOperation(
  method: string,
  pattern: string,
  area: string,
  operationId = operationIdOf(method, pattern),
): JsonSchema {
  return {
    operationId,
    summary: `Not built: ${area}`,
    description: `A route of the reference API that tokenvault does not implement: it answers 501. See ${NOT_BUILT_DOCS}.`,
    tags: ['Not built'],
    'x-not-built': true,
    parameters: [...pattern.matchAll(/:(\w+)/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    })),
    responses: { 501: problemResponse('Not implemented by tokenvault (a route of the reference API)') },
  }
}

/** An API key header's security scheme: `SvcApiKey` for `SVC-API-KEY`, `BtApiKey` for `BT-API-KEY`. */
const schemeName = (prefix: string) =>
  `${prefix
    .toLowerCase()
    .split('-')
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('')}ApiKey`

/**
 * The OpenAPI 3.1 document of the HTTP API: every route of `ROUTES`, request bodies and query
 * parameters from the valibot schemas the core parses them with, answers from
 * `RESPONSE_SCHEMAS`, the API key header as the security scheme. Throws if a route is undocumented.
 */
export function openApiDocument(options: OpenApiOptions): JsonSchema {
  const prefix = (options.headerPrefixes[0] ?? 'SVC').toUpperCase()
  const headers = { transaction: `${prefix}-TRANSACTION-ID`, idempotency: `${prefix}-IDEMPOTENCY-KEY` }
  const paths: Record<string, Record<string, JsonSchema>> = {}
  for (const [method, pattern, route] of ROUTES) {
    const doc = ROUTE_DOCS[`${method} ${pattern}`]
    if (!doc) throw new Error(`the route ${method} ${pattern} has no entry in ROUTE_DOCS`)
    const path = pattern.replace(/:(\w+)/g, '{$1}')
    paths[path] ??= {}
    paths[path][method.toLowerCase()] = operation(
      method,
      pattern,
      route.status,
      route.mediaType,
      doc,
      headers,
    )
  }
  const status = (values: string[]) => ({
    type: 'object',
    properties: { status: { enum: values } },
    required: ['status'],
  })
  Object.assign(paths, {
    '/healthz': plain('getHealth', 'Health: the process answers', status(['ok'])),
    '/readyz': plain(
      'getReadiness',
      'Readiness: the store is reachable (503 when not, and while shutting down)',
      status(['ready']),
    ),
    '/openapi.json': plain('getOpenApiDocument', 'This document', { type: 'object' }),
  })
  for (const [method, pattern, area, operationId] of NOT_BUILT) {
    const path = pattern.replace(/:(\w+)/g, '{$1}')
    paths[path] ??= {}
    paths[path][method.toLowerCase()] ??= notBuiltOperation(method, pattern, area, operationId)
  }
  if (options.testControl) Object.assign(paths, TEST_CONTROL_PATHS)
  return {
    openapi: '3.1.0',
    info: {
      title: 'tokenvault',
      version: PACKAGE_VERSION,
      description: 'The HTTP API of an embeddable tokenization vault.',
    },
    servers: [{ url: options.basePath === '' ? '/' : options.basePath }],
    security: options.headerPrefixes.map((p) => ({ [schemeName(p)]: [] })),
    paths,
    components: {
      securitySchemes: {
        ...Object.fromEntries(
          options.headerPrefixes.map((p) => [
            schemeName(p),
            { type: 'apiKey', in: 'header', name: `${p.toUpperCase()}-API-KEY` },
          ]),
        ),
        ...(options.testControl
          ? { AdminToken: { type: 'http', scheme: 'bearer', description: 'the --admin-token of test mode' } }
          : {}),
      },
      schemas: RESPONSE_SCHEMAS,
    },
  }
}
