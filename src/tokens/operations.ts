import type { Ctx, CursorPage, Paginated } from '../call/index.js'
import type { Json, Token, TokenTree } from '../kernel/index.js'
import { listTokensV2, searchTokensV1, searchTokensV2 } from '../search/index.js'
import type {
  CreateTokenInput,
  DetokenizeInput,
  ListTokensQuery,
  ListTokensV2Query,
  SearchTokensInput,
  SearchTokensV2Input,
  TokenizeInput,
  UpdateTokenInput,
} from './inputs.js'
import { createToken, tokenizeBody } from './token-creates.js'
import type { ConvertTokenIntentInput } from './token-intents.js'
import { detokenizeBody, getToken, listTokens, requireAnyRead } from './token-reads.js'
import { deleteToken, updateToken } from './update.js'

/** Token create, get, update and delete for one caller. */
export function tokenOperations(ctx: Ctx) {
  return {
    /**
     * Creates a token (enlists in the caller's transaction). Duplicate id → conflict. With
     * `token_intent_id` instead of `type` and `data`, converts that token intent (see `convertedBody`).
     */
    create: (input: CreateTokenInput | ConvertTokenIntentInput): Promise<Token> =>
      createToken(ctx, input as CreateTokenInput),

    /**
     * Tokenizes a request of any JSON shape, as Basis Theory's Tokenize endpoint does: each token
     * create body becomes a token (answered with `data` under its mask), each plain value a
     * `token`-type token (answered by its id), in the request's shape; at most 100 tokens, all in
     * one atomic write (enlisted in the caller's transaction). A bad body: `validation_failed`
     * naming its path; nothing is written.
     */
    tokenize: (input: TokenizeInput): Promise<TokenTree> => tokenizeBody(ctx, input),

    /**
     * Replaces the detokenization expressions in any JSON value, as Basis Theory's Detokenize
     * endpoint does: `{{ <token id> }}` by the token's data, `{{ token: <token id> }}` by the whole
     * token, each under the caller's `token:read` transform (403 without it; 400 for a token that
     * does not exist or a filter expression); at most 100 tokens. Reads see the caller's transaction.
     */
    detokenize: (input: DetokenizeInput): Promise<Json> => detokenizeBody(ctx, input),

    /**
     * Lists the tenant's tokens the caller may read, ordered by id, each under its read transform;
     * filters `id` and `type` (lists) and `metadata` (`metadata.<key>=<value>`: exact but for
     * case, ANDed); `page` and `size`. With the transaction header, the transaction's view.
     */
    list: (query: ListTokensQuery = {}): Promise<Paginated<Token>> => listTokens(ctx, query),

    /**
     * Lists the tenant's tokens the caller may read with cursor pagination (`start`, `size`),
     * filtered by `type`, `container`, `metadata` (JSON) and `fingerprint`: see `listTokensV2`.
     */
    async listV2(query: ListTokensV2Query = {}): Promise<CursorPage<Token>> {
      requireAnyRead(ctx)
      return listTokensV2(ctx, query)
    },

    /**
     * Searches the tenant's tokens (`POST /tokens/search`): `{ query, page, size }`, answered as a
     * page like `list`. Needs `token:search`; see `parseQuery` for the query language.
     */
    search: async (input: SearchTokensInput = {}): Promise<Paginated<Token>> => searchTokensV1(ctx, input),

    /**
     * Searches the tenant's tokens with cursor pagination (`POST /v2/tokens/search`):
     * `{ query, start, size }` (or `page: { start, size }`), answered like `listV2`.
     */
    searchV2: async (input: SearchTokensV2Input = {}): Promise<CursorPage<Token>> =>
      searchTokensV2(ctx, input),

    /** Reads a token under the caller's read transform. Expired or absent → not found. */
    get: (id: string): Promise<Token> => getToken(ctx, id),

    /**
     * Applies a merge patch to `data`, `metadata`, `containers`, `mask`, `fingerprint_expression`,
     * `search_indexes` and `expires_at`. Changing what decides visibility needs reveal access
     * (`requireVisibilityKept`); the answer is the token under the caller's own read access.
     */
    update: (id: string, input: UpdateTokenInput): Promise<Token> => updateToken(ctx, id, input),

    /** Deletes a token and every association it is part of. */
    delete: (id: string): Promise<void> => deleteToken(ctx, id),
  }
}
