import type { Ctx } from '../call/index.js'
import type { Json, Token, TokenTree } from '../kernel/index.js'
import { invalid, ServiceError } from '../kernel/index.js'
import { createdAnswer, creationChecks, newToken } from './create.js'
import { writeTokens } from './dedup.js'
import { decryptedBody, decryptedTree } from './encrypted.js'
import type { CreateTokenInput, TokenizeInput } from './inputs.js'
import { consumedIntents, intentConverted, intentsConvertedTree } from './token-intents.js'
import { fingerprintedNew } from './token-types.js'
import { planTokenize } from './tokenize.js'

/** Creates a token (enlists in the caller's transaction). Duplicate id → conflict. */
export async function createToken(ctx: Ctx, input: CreateTokenInput): Promise<Token> {
  const minted: string[] = []
  // A browser's encrypted data (`encrypted`, a JWE to a client key) is decrypted first.
  const plain = await decryptedBody(ctx, input)
  // A token intent named by `token_intent_id` gives its type and data, and goes in the token's write.
  const { body, consume } = await intentConverted(ctx, plain)
  const token = await fingerprintedNew(ctx, newToken(ctx, body, minted))
  const [created] = await writeTokens(
    ctx,
    [token],
    (tx, written) =>
      creationChecks(
        ctx,
        tx,
        written.map((t) => t.id),
      ),
    { enlist: true, minted, ...(consume ? { extra: () => consumedIntents([consume]) } : {}) },
  )
  return createdAnswer(ctx, created!)
}

/** Tokenizes a request of any JSON shape (see `tokenOperations().tokenize`). */
export async function tokenizeBody(ctx: Ctx, input: TokenizeInput): Promise<TokenTree> {
  if (input === undefined)
    throw invalid('body', 'is required: a token create body, or any JSON shape holding them')
  const refuse = (message: string, path: string) =>
    new ServiceError('validation_failed', message, { issues: { [path]: [message] } })
  const plain = await decryptedTree(ctx, input as Json)
  // Bodies naming `token_intent_id` take their intent's type and data, consumed in the same write.
  const { tree, consume } = await intentsConvertedTree(ctx, plain)
  const { tokens, minted, answer } = planTokenize(ctx, tree, { root: '', refuse })
  const ready = await Promise.all(tokens.map((t) => fingerprintedNew(ctx, t)))
  const created = await writeTokens(
    ctx,
    ready,
    (tx, written) =>
      creationChecks(
        ctx,
        tx,
        written.map((t) => t.id),
      ),
    { enlist: true, minted, ...(consume.length ? { extra: () => consumedIntents(consume) } : {}) },
  )
  const byId = new Map(tokens.map((t, i) => [t.token.id, created[i]!]))
  return answer((token) => createdAnswer(ctx, byId.get(token.id)!))
}
