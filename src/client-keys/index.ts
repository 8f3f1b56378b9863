// The public face of client encryption keys: what other folders of src/ import, listed by hand.

export { decryptPayload, MAX_JWE_LENGTH } from './jwe.js'
export type { CreateClientKeyInput, CreatedClientKey, ShownClientKey } from './keys.js'
export { clientKeyInput, clientKeyOperations, MAX_CLIENT_KEYS_PER_TENANT } from './keys.js'
