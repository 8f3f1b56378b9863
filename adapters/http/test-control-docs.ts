import type { JsonSchema } from './response-schemas.js'

/** The `/_test/` control plane in the OpenAPI document (test mode): its paths and its bearer scheme. */

const problem = { $ref: '#/components/schemas/Problem' }
const problems = {
  '400': {
    description: 'Bad input; nothing changed',
    content: { 'application/problem+json': { schema: problem } },
  },
  '401': {
    description: 'No or wrong admin token',
    content: { 'application/problem+json': { schema: problem } },
  },
}
const object = { type: 'object' }
const ok = (description: string, schema?: JsonSchema) =>
  schema ? { description, content: { 'application/json': { schema } } } : { description }
const op = (
  operationId: string,
  summary: string,
  responses: Record<string, JsonSchema>,
  body?: JsonSchema,
  parameters?: JsonSchema[],
) => ({
  operationId,
  summary,
  tags: ['Test control'],
  security: [{ AdminToken: [] }],
  ...(parameters ? { parameters } : {}),
  ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
  responses: { ...responses, ...problems },
})

/** A test destination: its origin and how it answers (`POST /_test/proxy/destinations`). */
const destination = {
  type: 'object',
  properties: {
    origin: { type: 'string', description: 'An http or https origin (scheme, host and port only)' },
    respond: {
      description: "'echo' (the default: the request back as JSON), or a canned answer",
      oneOf: [
        { type: 'string', enum: ['echo'] },
        {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'integer', minimum: 200, maximum: 599, default: 200 },
            headers: {
              type: 'object',
              maxProperties: 32,
              additionalProperties: { type: 'string', maxLength: 8192 },
            },
            body: { description: 'A string as it is, any other JSON value as JSON; at most 65536 bytes' },
          },
        },
      ],
    },
  },
} satisfies JsonSchema

const fault: JsonSchema = {
  type: 'object',
  properties: {
    method: { type: 'string', description: 'GET, POST, … or * (default *)' },
    path: { type: 'string', description: 'A route pattern (/tokens/{id}) or an exact path' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    times: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
    delay_ms: { type: 'integer', minimum: 0, maximum: 60_000, default: 0 },
  },
  required: ['path'],
  additionalProperties: false,
}
const shownFault: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    method: { type: 'string' },
    path: { type: 'string' },
    status: { type: ['integer', 'null'] },
    times_left: { type: 'integer' },
    delay_ms: { type: 'integer' },
  },
  required: ['id', 'method', 'path', 'status', 'times_left', 'delay_ms'],
}
const query = (name: string, schema: JsonSchema, description: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  description,
})

/** The control plane's paths, for `openApiDocument({ testControl: true })`. */
export const TEST_CONTROL_PATHS: Record<string, Record<string, JsonSchema>> = {
  '/_test/clock': {
    get: op('testClockGet', 'The manual clock', { '200': ok('The time', object) }),
    post: op(
      'testClockMove',
      'Moves the manual clock ({ advance_ms } or { set }) and runs the sweep',
      { '200': ok('The new time and what the sweep removed', object) },
      {
        oneOf: [
          { type: 'object', properties: { advance_ms: { type: 'number' } }, required: ['advance_ms'] },
          { type: 'object', properties: { set: { type: 'string', format: 'date-time' } }, required: ['set'] },
        ],
      },
    ),
  },
  '/_test/reset': {
    post: op(
      'testReset',
      'Back to the state at start; clears the journal (unless journal=keep) and the faults',
      { '204': ok('Reset') },
      undefined,
      [query('journal', { enum: ['keep', 'clear'] }, 'keep the journal (default: clear it)')],
    ),
  },
  '/_test/snapshot': {
    post: op('testSnapshot', 'The whole state (token data in the clear)', {
      '200': ok('A snapshot', object),
    }),
  },
  '/_test/restore': {
    post: op('testRestore', 'Puts back a snapshot', { '204': ok('Restored') }, object),
  },
  '/_test/fixture': {
    post: op('testFixture', 'Loads a fixture', { '201': ok('The tenants made', object) }, object),
  },
  '/_test/journal': {
    get: op('testJournal', 'The journal of operations', { '200': ok('Entries', object) }, undefined, [
      query('operation', { type: 'string' }, 'token.create, …'),
      query('since', { type: 'string', format: 'date-time' }, 'inclusive'),
      query('tenant', { type: 'string' }, 'a tenant id'),
      query('limit', { type: 'integer', minimum: 0 }, 'newest entries kept'),
    ]),
  },
  '/_test/requests': {
    get: op(
      'testRequests',
      'The request log: each exchange with its problem, journal entries and access traces',
      { '200': ok('Entries', object) },
      undefined,
      [
        query('after', { type: 'integer', minimum: 0 }, 'entries after this seq'),
        query('tenant', { type: 'string' }, 'a tenant id'),
        query('failed', { type: 'boolean' }, 'statuses of 400 or more only'),
        query('mark', { type: 'string' }, 'entries after POST /_test/mark with this name'),
        query('limit', { type: 'integer', minimum: 0 }, 'newest entries kept'),
      ],
    ),
  },
  '/_test/requests/{id}': {
    get: {
      ...op('testRequest', 'One entry of the request log, by request id', {
        '200': ok('The entry', object),
        '404': ok('Not in the log (never, or evicted)'),
      }),
      parameters: [
        {
          name: 'id',
          in: 'path',
          required: true,
          schema: { type: 'string' },
          description: 'the X-Request-Id answered',
        },
      ],
    },
  },
  '/_test/mark': {
    post: op(
      'testMark',
      'Names the entries that follow in the request log',
      { '201': ok('Marked', object) },
      object,
    ),
  },
  '/_test/faults': {
    post: op(
      'testFaultAdd',
      'Injects a fault: the next matching requests wait and/or answer a status',
      {
        '201': ok('The fault', shownFault),
      },
      fault,
    ),
    get: op('testFaultList', 'The faults still to apply', {
      '200': ok('Faults', { type: 'object', properties: { data: { type: 'array', items: shownFault } } }),
    }),
    delete: op('testFaultClear', 'Clears every fault', { '204': ok('Cleared') }),
  },
  '/_test/proxy': {
    get: op(
      'testProxyReceived',
      'What the test destinations (--test-destination) received, in the clear, oldest first; cleared by reset',
      { '200': ok('{ origins, data: [{ origin, method, url, headers, body }] }', object) },
      undefined,
      [query('origin', { type: 'string' }, 'one destination origin')],
    ),
    delete: op('testProxyClear', 'Forgets what the test destinations received', { '204': ok('Cleared') }),
  },
  '/_test/proxy/destinations': {
    post: op(
      'testProxyDestinationAdd',
      'Routes an origin to a destination in the process (echo or a canned answer) and puts it on the egress list; replaces a known one',
      { '201': ok('The destination', destination) },
      {
        type: 'object',
        required: ['origin'],
        additionalProperties: false,
        properties: { origin: { type: 'string', maxLength: 2048 }, respond: destination.properties.respond },
      },
    ),
    get: op('testProxyDestinationList', 'The test destinations routed, in the order they were added', {
      '200': ok('Destinations', {
        type: 'object',
        properties: { data: { type: 'array', items: destination } },
      }),
    }),
    delete: op(
      'testProxyDestinationRemove',
      'Removes one destination (or all without origin) and takes it off the egress list; what it received stays',
      { '204': ok('Removed'), '404': ok('Not a test destination') },
      undefined,
      [query('origin', { type: 'string' }, 'the destination origin (all when absent)')],
    ),
  },
  '/_test/logs': {
    get: op(
      'testLogs',
      "A tenant's audit log, newest first (no log:read key needed); ids, names and outcomes only",
      { '200': ok('{ data: [entries], next? }', object), '404': ok('No such tenant') },
      undefined,
      [
        query('tenant', { type: 'string' }, 'the tenant id (required)'),
        query('entity_type', { type: 'string', maxLength: 100 }, 'token, application, …'),
        query('entity_id', { type: 'string', maxLength: 400 }, 'one record (needs entity_type)'),
        query('start_date', { type: 'string', format: 'date-time' }, 'entries at or after'),
        query('end_date', { type: 'string', format: 'date-time' }, 'entries at or before'),
        query('size', { type: 'integer', minimum: 1, maximum: 100 }, 'entries a page (20)'),
        query('start', { type: 'string' }, 'the next of the page before'),
      ],
    ),
  },
  '/_test/logs/verify': {
    get: op(
      'testLogsVerify',
      "Verifies a tenant's audit log chain: the first broken link, if any",
      { '200': ok('{ ok, entries, lanes, broken? }', object), '404': ok('No such tenant') },
      undefined,
      [query('tenant', { type: 'string' }, 'the tenant id (required)')],
    ),
  },
  '/_test/webhooks': {
    get: op(
      'testWebhookDeliveries',
      "A tenant's deliveries and callbacks, oldest first: what was sent and each attempt's outcome",
      { '200': ok('{ data: [deliveries] }', object) },
      undefined,
      [
        query('tenant', { type: 'string' }, 'the tenant id (required)'),
        query('after', { type: 'string' }, 'deliveries after this id'),
        query('limit', { type: 'integer', minimum: 0, maximum: 1000 }, 'at most (100)'),
      ],
    ),
  },
  '/_test/webhooks/deliver': {
    post: op(
      'testWebhookDeliverNow',
      "Delivers a tenant's pending deliveries now, past their back-off (the clock unmoved)",
      { '200': ok('{ attempted }', object) },
      { type: 'object', required: ['tenant'], properties: { tenant: { type: 'string' } } },
    ),
  },
  '/_test/webhooks/{id}/redeliver': {
    post: {
      ...op(
        'testWebhookDeliverAgain',
        'Sends a delivered or failed delivery once more (to test a receiver with duplicates)',
        { '200': ok('The delivery', object), '404': ok('No such delivery') },
        { type: 'object', required: ['tenant'], properties: { tenant: { type: 'string' } } },
      ),
      parameters: [
        {
          name: 'id',
          in: 'path',
          required: true,
          schema: { type: 'string' },
          description: 'the delivery id',
        },
      ],
    },
  },
  '/_test/webhooks/signing-key': {
    get: op('testWebhookSigningKey', 'The public key receivers verify BT-SIGNATURE with', {
      '200': ok('{ public_key }', object),
    }),
  },
}
