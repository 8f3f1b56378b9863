/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 takes them) of the HTTP API's answers. The records are
 * TypeScript types in `src/kernel/types.ts`, not valibot schemas, so their answer shapes are written here
 * beside the route table; the OpenAPI test validates real answers against them.
 */

/** A JSON Schema object. */
export type JsonSchema = { [key: string]: unknown }

const string: JsonSchema = { type: 'string' }
const dateTime: JsonSchema = { type: 'string', format: 'date-time' }
const strings: JsonSchema = { type: 'array', items: string }
const anyJson: JsonSchema = {}

/** An object schema: `required` names the fields always present; others may be absent. */
function record(required: Record<string, JsonSchema>, optional: Record<string, JsonSchema> = {}): JsonSchema {
  return {
    type: 'object',
    properties: { ...required, ...optional },
    required: Object.keys(required),
  }
}

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` })

const permissionList: JsonSchema = { type: 'array', items: string }

/** The named answer schemas, the `components.schemas` of the document. */
export const RESPONSE_SCHEMAS: Record<string, JsonSchema> = {
  Problem: record(
    { type: string, title: string, status: { type: 'integer' }, detail: string },
    { errors: { type: 'object', additionalProperties: strings } },
  ),
  Pagination: record({
    total_items: { type: 'integer', minimum: 0 },
    page_number: { type: 'integer', minimum: 1 },
    page_size: { type: 'integer', minimum: 1 },
    total_pages: { type: 'integer', minimum: 0 },
  }),
  Token: record(
    {
      id: string,
      tenant_id: string,
      type: string,
      containers: strings,
      metadata: { type: 'object', additionalProperties: string },
      created_by: string,
      created_at: dateTime,
    },
    {
      data: anyJson,
      mask: anyJson,
      fingerprint: { ...string, description: 'Keyed hash of the contents (per tenant and type)' },
      fingerprint_expression: string,
      search_indexes: strings,
      expires_at: dateTime,
      modified_by: string,
      modified_at: dateTime,
      _extras: {
        ...record({ deduplicated: { type: 'boolean' } }),
        description: 'On answers to a create with deduplicate_token only',
      },
    },
  ),
  /** Tokenize answers the request's shape with tokens (or token ids) in place of the bodies. */
  TokenTree: anyJson,
  Transaction: record({ id: string, created_at: dateTime, created_by: string, expires_at: dateTime }),
  ConfigurationElement: record(
    { name: string, type: { enum: ['string', 'boolean', 'number'] } },
    { description: string },
  ),
  RequestParameterElement: record(
    { name: string, type: { enum: ['string', 'boolean', 'number'] }, optional: { type: 'boolean' } },
    { description: string },
  ),
  ReactorFormula: record(
    {
      id: string,
      name: string,
      type: { enum: ['official', 'private'] },
      status: { enum: ['verified', 'coming_soon'] },
      code: string,
      configuration: { type: 'array', items: ref('ConfigurationElement') },
      request_parameters: { type: 'array', items: ref('RequestParameterElement') },
    },
    {
      description: string,
      icon: string,
      created_at: dateTime,
      created_by: string,
      modified_at: dateTime,
      modified_by: string,
    },
  ),
  Reactor: record(
    {
      id: string,
      tenant_id: string,
      name: string,
      configuration: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
      created_at: dateTime,
      created_by: string,
    },
    {
      formula_id: string,
      formula: ref('ReactorFormula'),
      code: string,
      application_id: string,
      application: ref('Application'),
      modified_at: dateTime,
      modified_by: string,
    },
  ),
  ReactResult: record({ tokens: anyJson }, { raw: anyJson }),
  CreatedSession: record({ session_key: string, nonce: string, expires_at: dateTime }),
  AccessRule: record(
    {
      description: string,
      priority: { type: 'integer' },
      transform: { enum: ['redact', 'mask', 'reveal'] },
      permissions: permissionList,
    },
    {
      container: string,
      conditions: {
        type: 'array',
        items: record({
          attribute: { enum: ['id', 'container'] },
          operator: { enum: ['equals', 'starts_with'] },
          value: string,
        }),
      },
    },
  ),
  Application: record(
    {
      id: string,
      tenant_id: string,
      name: string,
      type: { enum: ['private', 'public', 'management'] },
      permissions: permissionList,
      created_at: dateTime,
    },
    {
      rules: { type: 'array', items: ref('AccessRule') },
      created_by: string,
      modified_at: dateTime,
      modified_by: string,
      expires_at: dateTime,
      /** Only in the answer that created the application: its key, shown once. */
      key: string,
    },
  ),
  ApplicationKey: record({ id: string, created_at: dateTime }, { created_by: string, key: string }),
  Tenant: record({ id: string, name: string, created_at: dateTime }),
  PermissionInfo: record({
    type: string,
    description: string,
    application_types: { type: 'array', items: { enum: ['private', 'public', 'management'] } },
  }),
}

/** A page of `name`: `{ pagination, data: [...] }`. */
export const pageOf = (name: string): JsonSchema =>
  record({ pagination: ref('Pagination'), data: { type: 'array', items: ref(name) } })

/** A cursor page of `name`: `{ pagination: { page_size, next? }, data: [...] }`. */
export const cursorPageOf = (name: string): JsonSchema =>
  record({
    pagination: record({ page_size: { type: 'integer', minimum: 1 } }, { next: string }),
    data: { type: 'array', items: ref(name) },
  })

/** A plain array of `name`. */
export const listOf = (name: string): JsonSchema => ({ type: 'array', items: ref(name) })

/** A reference to the named answer schema. */
export const schemaRef = ref
