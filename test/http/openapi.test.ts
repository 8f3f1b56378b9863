import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it } from 'vitest'
import { NOT_BUILT } from '../../adapters/http/not-built.js'
import { ROUTES } from '../../adapters/http/routes.js'
import { json, problem, setup } from './setup.js'

type Doc = {
  openapi: string
  servers: { url: string }[]
  security: unknown[]
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, { type: string; in: string; name: string }> }
}
type Operation = {
  security?: unknown[]
  parameters: { name: string; in: string }[]
  requestBody?: { content: Record<string, { schema: unknown }> }
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>
}

const pathOf = (pattern: string) => pattern.replace(/:(\w+)/g, '{$1}')
const pointer = (...parts: string[]) =>
  `doc#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`

/** A validator over the served document: answers and bodies checked against the schema at a pointer. */
function validatorOf(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  ajv.addSchema(doc, 'doc')
  const check = (ref: string, value: unknown) => {
    const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref })
    const ok = validate(value)
    return { ok, errors: JSON.stringify(validate.errors) }
  }
  return {
    /** Checks an answer of `method` on `pattern` (a route table pattern) with `status`. */
    answer(method: string, pattern: string, status: number, body: unknown) {
      return check(
        pointer(
          'paths',
          pathOf(pattern),
          method.toLowerCase(),
          'responses',
          String(status),
          'content',
          'application/json',
          'schema',
        ),
        body,
      )
    },
    problem(method: string, pattern: string, body: unknown) {
      return check(
        pointer(
          'paths',
          pathOf(pattern),
          method.toLowerCase(),
          'responses',
          '4XX',
          'content',
          'application/problem+json',
          'schema',
        ),
        body,
      )
    },
    body(method: string, pattern: string, body: unknown, mediaType = 'application/json') {
      return check(
        pointer(
          'paths',
          pathOf(pattern),
          method.toLowerCase(),
          'requestBody',
          'content',
          mediaType,
          'schema',
        ),
        body,
      )
    },
  }
}

describe('GET /openapi.json', () => {
  it('serves an OpenAPI 3.1 document without a key, listing every route of the table', async () => {
    const { call } = await setup()
    const doc = await json<Doc>(await call('GET', '/openapi.json'), 200)
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.servers).toEqual([{ url: '/' }])
    expect(doc.components.securitySchemes.SvcApiKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'SVC-API-KEY',
    })
    expect(doc.security).toEqual([{ SvcApiKey: [] }, { BtApiKey: [] }])
    for (const [method, pattern, route] of ROUTES) {
      const op = doc.paths[pathOf(pattern)]?.[method.toLowerCase()]
      expect(op, `${method} ${pattern}`).toBeDefined()
      expect(Object.keys(op!.responses), `${method} ${pattern}`).toContain(String(route.status))
      const pathParams = op!.parameters.filter((p) => p.in === 'path').map((p) => p.name)
      expect(pathParams).toEqual([...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]))
      expect(op!.parameters.map((p) => p.name)).toContain('SVC-TRANSACTION-ID')
      if (method === 'POST' || method === 'PATCH' || method === 'PUT') {
        expect(op!.parameters.map((p) => p.name)).toContain('SVC-IDEMPOTENCY-KEY')
      }
    }
    const operations = Object.values(doc.paths).flatMap((methods) => Object.keys(methods))
    expect(operations.length).toBe(ROUTES.length + 3 + NOT_BUILT.length)
    expect(doc.paths['/healthz']!.get!.security).toEqual([])
    expect(doc.paths['/tokens/{id}']!.patch!.requestBody!.content).toHaveProperty([
      'application/merge-patch+json',
    ])
    expect(doc.paths['/tokens']!.get!.parameters.map((p) => p.name)).toEqual(
      expect.arrayContaining(['id', 'type', 'metadata', 'page', 'size']),
    )
  })

  it('names the configured headers and is served under basePath with it as the server URL', async () => {
    const { call } = await setup({ basePath: '/vault', headerPrefix: 'BT' })
    const doc = await json<Doc>(await call('GET', '/vault/openapi.json'), 200)
    expect(doc.servers).toEqual([{ url: '/vault' }])
    expect(doc.components.securitySchemes.BtApiKey!.name).toBe('BT-API-KEY')
    expect(doc.paths['/tokens']!.post!.parameters.map((p) => p.name)).toContain('BT-TRANSACTION-ID')
    await problem(await call('GET', '/openapi.json'), 404)
    const head = await call('HEAD', '/vault/openapi.json')
    expect(head.status).toBe(200)
  })

  it('describes request bodies by the schemas the core parses them with', async () => {
    const { call } = await setup()
    const check = validatorOf(await json<Doc>(await call('GET', '/openapi.json'), 200))
    expect(check.body('POST', '/tokens', { type: 'card', data: { n: 1 }, containers: ['/pci/'] }).ok).toBe(
      true,
    )
    expect(check.body('POST', '/tokens', { tpye: 'card', data: 1 }).ok).toBe(false)
    expect(check.body('POST', '/tokens', { type: 'bad type!', data: 1 }).ok).toBe(false)
    expect(check.body('PATCH', '/tokens/:id', { metadata: null }, 'application/merge-patch+json').ok).toBe(
      true,
    )
    expect(
      check.body('POST', '/applications', { name: 'a', type: 'private', permissions: ['token:read'] }).ok,
    ).toBe(true)
    expect(check.body('POST', '/applications', { name: 'a', type: 'privat', permissions: [] }).ok).toBe(false)
    expect(check.body('POST', '/sessions/authorize', { nonce: 'n', permissions: ['token:nope'] }).ok).toBe(
      false,
    )
  })

  it('validates real answers against the response schemas', async () => {
    const { call, keys } = await setup()
    const check = validatorOf(await json<Doc>(await call('GET', '/openapi.json'), 200))
    const seen = new Set<string>()
    /** Sends a request, checks its answer against the document, and returns the answer's body. */
    const send = async (method: string, pattern: string, path: string, key: string, body?: unknown) => {
      const route = ROUTES.find(([m, p]) => m === method && p === pattern)![2]
      const headers = method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : undefined
      const response = await call(method, path, { key, body, ...(headers ? { headers } : {}) })
      const text = await response.text()
      expect(response.status, `${method} ${path}: ${text}`).toBe(route.status)
      seen.add(`${method} ${pattern}`)
      if (text === '') return undefined
      const answer = JSON.parse(text)
      const result = check.answer(method, pattern, route.status, answer)
      expect(result.ok, `${method} ${path}: ${result.errors}`).toBe(true)
      return answer
    }
    const P = keys.full
    const M = keys.management
    await send('POST', '/tokens', '/tokens', P, {
      id: 'card',
      type: 'token',
      data: { n: '4242' },
      metadata: { a: 'b' },
      expires_at: '2040-01-01',
    })
    await send('POST', '/tokens/:id/children', '/tokens/card/children', P, { type: 'x', data: 2 })
    await send('GET', '/tokens', '/tokens?metadata.a=b', P)
    const v2 = await send('GET', '/v2/tokens', '/v2/tokens?size=1', P)
    expect(v2.pagination.next).toBeTypeOf('string')
    await send('GET', '/tokens/:id', '/tokens/card', P)
    await send('PATCH', '/tokens/:id', '/tokens/card', P, { metadata: { c: 'd' } })
    await send('GET', '/tokens/:id/children', '/tokens/card/children', P)
    await send('POST', '/tokenize', '/tokenize', P, { a: { type: 'x', data: 1 }, b: 'plain' })
    await send('POST', '/detokenize', '/detokenize', P, { a: '{{ card }}' })
    const tx = await send('POST', '/transactions', '/transactions', P)
    await send('POST', '/transactions/:id/rollback', `/transactions/${tx.id}/rollback`, P)
    const formula = await send('POST', '/reactor-formulas', '/reactor-formulas', M, {
      name: 'f',
      type: 'private',
      code: 'module.exports = async (req) => ({ raw: req.args })',
      configuration: [{ name: 'region', type: 'string' }],
      request_parameters: [{ name: 'amount', type: 'number', optional: true }],
    })
    await send('GET', '/reactor-formulas', '/reactor-formulas', M)
    await send('GET', '/reactor-formulas/:id', `/reactor-formulas/${formula.id}`, M)
    const reactor = await send('POST', '/reactors', '/reactors', M, {
      name: 'r',
      formula: { id: formula.id },
      configuration: { region: 'eu' },
    })
    await send('GET', '/reactors', '/reactors', M)
    await send('GET', '/reactors/:id', `/reactors/${reactor.id}`, M)
    await send('PATCH', '/reactors/:id', `/reactors/${reactor.id}`, M, { name: 'r2' })
    await send('POST', '/reactors/:id/react', `/reactors/${reactor.id}/react`, P, { args: { amount: 3 } })
    await send('POST', '/sessions', '/sessions', keys.public)
    const app = await send('POST', '/applications', '/applications', M, {
      name: 'a',
      type: 'private',
      permissions: ['token:read'],
      rules: [],
    })
    await send('GET', '/applications', '/applications', M)
    await send('GET', '/applications/:id', `/applications/${app.id}`, M)
    await send('GET', '/applications/key', '/applications/key', M)
    const key = await send('POST', '/applications/:id/keys', `/applications/${app.id}/keys`, M)
    await send('GET', '/applications/:id/keys', `/applications/${app.id}/keys`, M)
    await send('GET', '/applications/:id/keys/:key', `/applications/${app.id}/keys/${key.id}`, M)
    await send('GET', '/tenants/self', '/tenants/self', M)
    await send('GET', '/permissions', '/permissions?application_type=public', M)
    expect(seen.size).toBeGreaterThanOrEqual(28)

    const missing = await problem(await call('GET', '/tokens/nope', { key: P }), 404)
    expect(check.problem('GET', '/tokens/:id', missing).ok).toBe(true)
    const invalid = await problem(await call('POST', '/tokens', { key: P, body: { data: 1 } }), 400)
    expect(check.problem('POST', '/tokens', invalid).ok).toBe(true)
  })

  it('has response schemas that reject wrong shapes', async () => {
    const { call } = await setup()
    const check = validatorOf(await json<Doc>(await call('GET', '/openapi.json'), 200))
    const token = {
      id: 't',
      tenant_id: 'x',
      type: 'card',
      containers: ['/'],
      metadata: {},
      created_by: 'a',
      created_at: 'z',
    }
    expect(check.answer('GET', '/tokens/:id', 200, token).ok).toBe(true)
    const { id: _id, ...noId } = token
    expect(check.answer('GET', '/tokens/:id', 200, noId).ok).toBe(false)
    expect(check.answer('GET', '/tokens/:id', 200, { ...token, metadata: { a: 1 } }).ok).toBe(false)
    expect(check.answer('GET', '/tokens', 200, { data: [token] }).ok).toBe(false)
    expect(check.answer('GET', '/permissions', 200, [{ type: 'token:read' }]).ok).toBe(false)
  })

  it('describes the document upload as a multipart form and its data as bytes', async () => {
    const { call } = await setup()
    const doc = await json<Doc>(await call('GET', '/openapi.json'), 200)
    const upload = doc.paths['/documents']!.post!
    expect(Object.keys(upload.requestBody!.content)).toEqual(['multipart/form-data'])
    expect(upload.requestBody!.content['multipart/form-data']!.schema).toMatchObject({
      properties: { document: { type: 'string', format: 'binary' } },
      required: ['document'],
    })
    expect(Object.keys(doc.paths['/documents/{id}/data']!.get!.responses['200']!.content!)).toEqual([
      'application/octet-stream',
    ])
    const check = validatorOf(doc)
    const shown = {
      id: 'a05d2a09-b4f4-4ce7-9743-ab18d3aa8a43',
      tenant_id: 't',
      metadata: { name: 'value' },
      content_type: 'application/pdf',
      created_by: 'a',
      created_at: '2030-01-01T00:00:00.000Z',
    }
    expect(check.answer('GET', '/documents/:id', 200, shown).ok).toBe(true)
    expect(check.answer('GET', '/documents/:id', 200, { ...shown, metadata: { a: 1 } }).ok).toBe(false)
  })
})
