// The types the route tables share (routes.ts, route-docs.ts and the feature route files), below all of them.
import type * as v from 'valibot'
import type { Client, Unchecked } from '../../src/service/index.js'
import type { Query } from './query.js'
import type { JsonSchema } from './response-schemas.js'

/** One operation of the HTTP API: a mapping onto one client method, with its success status. */
export interface Route {
  /** 201 creates, 200 reads, updates and lists (and the empty 200s), 202 accepted to run later, 204 deletes and links. */
  status: 200 | 201 | 202 | 204
  /** Whether the operation reads the query string (lists). */
  query: boolean
  /** The one media type the body must be declared as (any other, or none, is 415); default: any JSON type. */
  mediaType?: string
  /**
   * A multipart upload (`POST /documents`): the body is `multipart/form-data` of at most
   * `MAX_UPLOAD_BODY_BYTES`, handed to `run` parsed (`document`, `content_type`, `request`).
   */
  upload?: true
  /** Answers bytes: `run` gives `{ content_type, size, body }` (a stream), answered as they are. */
  binary?: true
  /**
   * Calls the client: path parameters in order, the parsed query, the JSON body (`undefined` when
   * none). The client takes them unchecked: each method validates its input.
   */
  run(client: Unchecked<Client>, params: string[], query: Query, body: unknown): Promise<unknown>
}

/** Any valibot schema. */
type Schema = v.GenericSchema<unknown, unknown>

/** What the OpenAPI document says of one route of `ROUTES`, beyond its method, path and status. */
export interface RouteDoc {
  /** The OpenAPI operationId when the one `operationIdOf` derives does not say it (actions: `commitTransaction`). */
  operationId?: string
  summary: string
  tag: string
  /** The valibot schema the core parses the body with (`null`: any JSON value). */
  body?: Schema | null
  /** The valibot schema the core parses the query with. */
  query?: Schema
  /** The JSON Schema of the success answer's body; none for answers without a body. */
  response?: JsonSchema
  /** A `multipart/form-data` body instead of JSON: the JSON Schema of its parts (`POST /documents`). */
  form?: JsonSchema
  /** The media type of the success answer when it is not JSON (bytes: `application/octet-stream`). */
  responseMediaType?: string
  /** When the route may also answer 202 (accepted, no body): what that answer means. */
  accepted?: string
}
